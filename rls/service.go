package rls

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// Service answers ShouldRateLimit with a limiter. It is safe for concurrent
// use; SetConfig swaps the configuration without stopping requests.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	cfg      atomic.Pointer[Config]
	lim      *limiter.Limiter
	reg      *prometheus.Registry
	own      []prometheus.Collector // the fleetlimit_ metrics in reg
	decided  *prometheus.CounterVec
	perLimit *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	requests prometheus.Counter
	latency  prometheus.Histogram
	syncs    *prometheus.HistogramVec
	detailed seriesCap
	tracing  Tracing
	bound    atomic.Pointer[boundMetrics]
	health   *health.Server
	draining atomic.Bool
	quota    quotaState
}

// NewService returns a Service over lim with cfg, its metrics in a new
// registry (see Handler).
func NewService(cfg *Config, lim *limiter.Limiter) *Service {
	s := &Service{lim: lim, reg: prometheus.NewRegistry(), detailed: seriesCap{seen: map[string]bool{}, max: MaxDetailedSeries},
		health: newHealth()}
	s.cfg.Store(cfg)
	s.decided = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetlimit_decisions_total",
		Help: "Descriptor decisions by domain and outcome (over, near, within, shadow)."}, []string{"domain", "outcome"})
	s.perLimit = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetlimit_limit_decisions_total",
		Help: "Decisions by configured limit (domain.key_value path; with detailed_metric, the request's value too) and outcome."},
		[]string{"limit", "outcome"})
	s.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetlimit_config_reloads_total",
		Help: "Configuration reloads by result (ok, error)."}, []string{"result"})
	s.requests = prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetlimit_requests_total", Help: "ShouldRateLimit requests."})
	s.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetlimit_decision_duration_seconds",
		Help:    "Time to answer one ShouldRateLimit request, store round trips included.",
		Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3}})
	s.syncs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetlimit_store_sync_duration_seconds",
		Help:    "Time of each sync of every key with the store, by result (ok, error).",
		Buckets: []float64{1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5}}, []string{"result"})
	lim.OnSync(func(d time.Duration, err error) {
		s.syncs.WithLabelValues(map[bool]string{true: "ok", false: "error"}[err == nil]).Observe(d.Seconds())
	})
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector())
	s.own = append([]prometheus.Collector{s.latency, s.syncs, s.decided, s.perLimit, s.reloads, s.requests}, s.statsMetrics()...)
	s.reg.MustRegister(s.own...)
	return s
}

// statsMetrics is the Service's metrics read from the limiter's Stats and
// Fleet when scraped.
func (s *Service) statsMetrics() []prometheus.Collector {
	lim := s.lim
	st := func(f func(limiter.Stats) float64) func() float64 { return func() float64 { return f(lim.Stats()) } }
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetlimit_keys", Help: "Keys held by this gateway."},
			st(func(x limiter.Stats) float64 { return float64(x.Keys) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetlimit_key_bytes", Help: "Bytes of the names of the keys held (bounded by max_key_bytes)."},
			st(func(x limiter.Stats) float64 { return float64(x.KeyBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_store_abandoned_total", Help: "Store calls a request gave up on (timed out or failed); the request fell back, and what the call did is withdrawn."},
			st(func(x limiter.Stats) float64 { return float64(x.Abandoned) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_store_forgotten_keys_total", Help: "Keys the store was found to have lost (a restart without persistence, FLUSHALL, an eviction); this gateway re-seeded them."},
			st(func(x limiter.Stats) float64 { return float64(x.Forgotten) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetlimit_store_degraded", Help: "1 while the store is unreachable and the fallback decides."},
			st(func(x limiter.Stats) float64 { return b2f(x.Degraded) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_store_errors_total", Help: "Store calls that failed or timed out."},
			st(func(x limiter.Stats) float64 { return float64(x.StoreErrors) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_store_syncs_total", Help: "Sync batches that succeeded."},
			st(func(x limiter.Stats) float64 { return float64(x.Syncs) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_fallback_decisions_total", Help: "Requests decided by the fallback."},
			st(func(x limiter.Stats) float64 { return float64(x.Fallbacks) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_store_round_trips_total", Help: "Decisions that waited on a store round trip."},
			st(func(x limiter.Stats) float64 { return float64(x.RoundTrips) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetlimit_gateways", Help: "K, the gateways of the fleet this gateway decides with (with membership, the live members)."},
			func() float64 { return float64(lim.Fleet().Gateways) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetlimit_gateway_index", Help: "This gateway's index in its fleet."},
			func() float64 { return float64(lim.Fleet().Gateway) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetlimit_fleet_changes_total", Help: "Changes of K or of this gateway's index seen (membership)."},
			func() float64 { return float64(lim.Fleet().Changes) }),
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// domainLabel is a domain's metric label: its name when the configuration
// has it, "unconfigured" otherwise, so that clients cannot mint series.
func domainLabel(cfg *Config, domain string) string {
	if _, ok := cfg.domains[domain]; ok {
		return domain
	}
	return "unconfigured"
}

// MaxDetailedSeries bounds the metric series that detailed_metric limits
// may create together; past it, new values count under "<limit>_other".
const MaxDetailedSeries = 1000

// seriesCap hands out at most max distinct labels.
type seriesCap struct {
	mu   sync.Mutex
	seen map[string]bool
	max  int
}

// label returns want while it is one of the first max labels seen, and
// other past them.
func (c *seriesCap) label(want, other string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[want] {
		return want
	}
	if len(c.seen) >= c.max {
		return other
	}
	c.seen[want] = true
	return want
}

// Config returns the configuration in force.
func (s *Service) Config() *Config { return s.cfg.Load() }

// SetConfig puts a new configuration in force for the next requests.
func (s *Service) SetConfig(c *Config) { s.cfg.Store(c) }

// CountReload records a reload's result in the metrics.
func (s *Service) CountReload(ok bool) {
	s.reloads.WithLabelValues(map[bool]string{true: "ok", false: "error"}[ok]).Inc()
}

// HTTPTimeouts bound every HTTP connection in time, so that a slow or idle
// client cannot hold one open. The zero value of a field means its default.
type HTTPTimeouts struct {
	ReadHeader time.Duration // default 5 s
	Read       time.Duration // the whole request, body included; default 10 s
	Write      time.Duration // default 30 s
	Idle       time.Duration // between requests; default 1 min
}

// HTTPServer is an http.Server for Handler with t's bounds and at most 64
// KiB of headers (the /json body is capped at MaxJSONBytes).
func (s *Service) HTTPServer(t HTTPTimeouts) *http.Server {
	return &http.Server{Handler: s.Handler(), MaxHeaderBytes: 64 << 10,
		ReadHeaderTimeout: cmp.Or(t.ReadHeader, 5*time.Second), ReadTimeout: cmp.Or(t.Read, 10*time.Second),
		WriteTimeout: cmp.Or(t.Write, 30*time.Second), IdleTimeout: cmp.Or(t.Idle, time.Minute)}
}

// Handler serves the HTTP API: POST /json (envoyproxy/ratelimit's JSON form
// of ShouldRateLimit: 200 when OK, 429 when over the limit), GET
// /healthcheck, and Prometheus metrics on /metrics.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /json", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBytes))
		if err != nil {
			if _, big := errors.AsType[*http.MaxBytesError](err); big {
				http.Error(w, fmt.Sprintf("request body over %d bytes", MaxJSONBytes), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
			http.Error(w, "invalid RateLimitRequest JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		var resp *pb.RateLimitResponse
		if s.tracing.Tracer != nil {
			resp, err = s.traced(r.Context(), &req, r.Header)
		} else {
			resp, err = s.shouldRateLimit(r.Context(), &req)
		}
		if err != nil {
			http.Error(w, status.Convert(err).Message(), http.StatusBadRequest)
			return
		}
		out, _ := protojson.Marshal(resp)
		w.Header().Set("Content-Type", "application/json")
		if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		w.Write(out)
	})
	mux.HandleFunc("GET /healthcheck", func(w http.ResponseWriter, r *http.Request) {
		ok, why := s.Health()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}
