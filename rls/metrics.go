package rls

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric describes one metric a Service exports on /metrics.
type Metric struct {
	Name   string   // the metric's name
	Type   string   // counter, gauge or histogram
	Help   string   // its help text
	Labels []string // its variable labels
}

// descText reads a prometheus.Desc's name, help and variable labels
// from its String form, the only way the client library shows them.
var descText = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), .*variableLabels: \{([^}]*)\}\}$`)

// Metrics lists the fleetlimit_ metrics s registers, by name (beside them
// /metrics carries the Go runtime's, the process's and go_build_info).
func (s *Service) Metrics() ([]Metric, error) {
	var out []Metric
	for _, c := range s.own {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m, err := metricOf(d, c)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// metricOf describes the metric of d, collected by c.
func metricOf(d *prometheus.Desc, c prometheus.Collector) (Metric, error) {
	f := descText.FindStringSubmatch(d.String())
	if f == nil {
		return Metric{}, fmt.Errorf("rls: cannot read metric description %s", d)
	}
	name, err1 := strconv.Unquote(f[1])
	help, err2 := strconv.Unquote(f[2])
	if err1 != nil || err2 != nil {
		return Metric{}, fmt.Errorf("rls: cannot read metric description %s", d)
	}
	m := Metric{Name: name, Help: help, Type: typeOf(c)}
	if f[3] != "" {
		m.Labels = strings.Split(f[3], ",")
	}
	return m, nil
}

// typeOf is the type of c's metrics.
func typeOf(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.HistogramVec, prometheus.Histogram:
		return "histogram"
	}
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var w dto.Metric
	if err := (<-ch).Write(&w); err == nil && w.Counter != nil {
		return "counter"
	}
	return "gauge"
}
