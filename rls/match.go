package rls

import "strings"

// Entry is one key/value pair of a request descriptor.
type Entry struct{ Key, Value string }

// Lookup finds the limit for a descriptor's entries in domain, by the rules
// of envoyproxy/ratelimit: at each level the exact key_value, then the
// first wildcard value (in file order) that matches it, '*' standing for
// any run of characters, then the key alone (any value); a limit applies
// only at the descriptor's last entry. nil means no limit.
func (c *Config) Lookup(domain string, entries []Entry) *RateLimit {
	return matchEntries(c, domain, entriesOf(entries)).limit
}

// entrySource gives a descriptor's entries without copying them: the
// request's own (pbEntries), or a []Entry.
type entrySource interface {
	Len() int
	At(i int) (key, value string)
}

type entriesOf []Entry

func (e entriesOf) Len() int                  { return len(e) }
func (e entriesOf) At(i int) (string, string) { return e[i].Key, e[i].Value }

// match is a descriptor's limit and what it is counted and measured by.
type match struct {
	limit *RateLimit
	// metric names the limit in metrics: FullKey, or with detailed_metric
	// or value_to_metric the request's own path.
	metric string
	// shared[i], when not "", is the wildcard value that entry i counts
	// under (share_threshold): every value matching it shares one count.
	shared []string
}

// step is how one entry was matched.
type step struct {
	node     *node
	wildcard string // the wildcard key that matched, or ""
	byValue  bool   // matched key_value (exactly or by wildcard), not the key alone
}

// maxSteps bounds the entries matched without allocating; deeper
// descriptors still match, with an allocation.
const maxSteps = 8

// match finds the limit of entries in domain (see Lookup) and its names.
// It allocates nothing unless a name other than the limit's own is needed.
func matchEntries[E entrySource](c *Config, domain string, es E) match {
	var m match
	n := c.domains[domain]
	if n == nil {
		return m
	}
	var stack [maxSteps]step
	steps := stack[:0]
	var buf [128]byte
	named := false // some step needs a name beyond FullKey
	for i := 0; i < es.Len(); i++ {
		k, v := es.At(i)
		kv := append(append(append(buf[:0], k...), '_'), v...)
		st := step{node: n.children[string(kv)], byValue: true}
		if st.node == nil && len(n.wildcards) > 0 {
			s := string(kv)
			for _, w := range n.wildcards {
				if w.matches(s) {
					st.node, st.wildcard = n.children[w.key], w.key
					break
				}
			}
		}
		if st.node == nil {
			st.node, st.byValue = n.children[k], false
		}
		if st.node == nil {
			break
		}
		named = named || st.node.valueToMetric || (st.wildcard != "" && st.node.shareThreshold)
		steps = append(steps, st)
		if st.node.limit != nil && i == es.Len()-1 {
			m.limit = st.node.limit
		}
		if len(st.node.children) == 0 {
			break
		}
		n = st.node
	}
	if m.limit == nil {
		return match{}
	}
	m.metric = m.limit.FullKey
	if named || m.limit.DetailedMetric {
		nameMatch(&m, domain, es, steps)
	}
	return m
}

// name fills in the metric name and the shared values of a match whose
// path asks for them, as upstream builds them: detailed_metric names every
// entry's key_value (the shared ones under their wildcard), value_to_metric
// the request's value at its level, and a wildcard without either its
// pattern.
func nameMatch[E entrySource](m *match, domain string, es E, steps []step) {
	var toMetric strings.Builder
	toMetric.WriteString(domain)
	for i, st := range steps {
		k, v := es.At(i)
		value := ""
		switch {
		case st.wildcard != "" && st.node.shareThreshold:
			value = strings.TrimPrefix(st.wildcard, k+"_")
			if m.shared == nil {
				m.shared = make([]string, es.Len())
			}
			m.shared[i] = value
		case st.wildcard != "" && !st.node.valueToMetric:
			value = strings.TrimPrefix(st.wildcard, k+"_")
		case st.byValue || st.node.valueToMetric:
			value = v
		}
		toMetric.WriteString("." + k)
		if value != "" {
			toMetric.WriteString("_" + value)
		}
	}
	switch {
	case m.limit.DetailedMetric && m.shared != nil:
		m.metric = sharedName(domain, es, m.shared)
	case m.limit.DetailedMetric:
		var b strings.Builder
		b.WriteString(domain)
		for i := 0; i < es.Len(); i++ {
			k, v := es.At(i)
			b.WriteString("." + k + "_" + v)
		}
		m.metric = b.String()
	case toMetric.String() != m.limit.FullKey:
		m.metric = toMetric.String()
	}
}

// sharedName is domain and every entry's key_value, the shared ones under
// their wildcard value.
func sharedName[E entrySource](domain string, es E, shared []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i := 0; i < es.Len(); i++ {
		k, v := es.At(i)
		b.WriteString("." + k)
		switch {
		case shared[i] != "":
			b.WriteString("_" + shared[i])
		case v != "":
			b.WriteString("_" + v)
		}
	}
	return b.String()
}
