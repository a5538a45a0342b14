package rls

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
	"github.com/fleetlimit/fleetlimit/window"
)

// ShouldRateLimit decides every descriptor of the request, as
// envoyproxy/ratelimit does: the request is over the limit when a
// descriptor that is neither in shadow mode nor a quota is over, or when
// every quota descriptor is.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if s.tracing.Tracer != nil {
		return s.traced(ctx, req, nil)
	}
	return s.shouldRateLimit(ctx, req)
}

// shouldRateLimit is ShouldRateLimit, untraced.
func (s *Service) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	s.requests.Inc()
	defer s.observe(time.Now())
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	if err := checkBounds(req); err != nil {
		return nil, err
	}
	cfg := s.cfg.Load()
	descs, err := resolve(cfg, req)
	if err != nil {
		return nil, err
	}
	if err := s.countAll(ctx, cfg, req, descs); err != nil {
		return nil, err
	}
	return s.respond(cfg, req, descs), nil
}

// observe records the time since start in the decision latency histogram.
func (s *Service) observe(start time.Time) { s.latency.Observe(time.Since(start).Seconds()) }

// descriptor is one request descriptor resolved against the configuration,
// and once counted, its answer.
type descriptor struct {
	limit   *RateLimit // nil: no limit applies
	metric  string     // the limit's name in metrics
	counter string     // its counter (see counterKey)
	quota   bool       // counted by the quota limiter (quota.go)
	hits    uint64     // what the request adds (0: check only)
	status  *pb.RateLimitResponse_DescriptorStatus
	win     time.Duration // the window of the limit its status describes
}

// resolve finds the limit of every descriptor of req (its override, or the
// configured one) and drops the limits that another one replaces. As
// upstream, an override applies only in a configured domain: a domain the
// configuration does not know has no limits at all.
func resolve(cfg *Config, req *pb.RateLimitRequest) ([]descriptor, error) {
	domain := req.GetDomain()
	descs := make([]descriptor, len(req.Descriptors))
	replaced := map[string]bool{}
	for i, d := range req.Descriptors {
		entries := pbEntries(d.GetEntries())
		descs[i].hits = max(uint64(req.GetHitsAddend()), 1)
		if h := d.GetHitsAddend(); h != nil {
			descs[i].hits = h.GetValue() // 0 is a check that counts nothing
		}
		var m match
		if o := d.GetLimit(); o != nil && cfg.domains[domain] != nil {
			u := Unit(o.GetUnit())
			if u.Duration() == 0 {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override with unknown unit %d", i, o.GetUnit())
			}
			var mult uint32
			if um := o.GetUnitMultiplier(); um != nil {
				if mult = um.GetValue(); mult == 0 {
					return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override with unit_multiplier 0: want 1 or more", i)
				}
			}
			// An override names no configured limit: its metric label must
			// not carry the request's values (API keys, unbounded).
			name := domainLabel(cfg, domain) + ".override"
			m = match{limit: &RateLimit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: u, UnitMultiplier: mult, FullKey: name}, metric: name}
		} else {
			m = matchEntries(cfg, domain, entries)
		}
		descs[i].limit, descs[i].metric = m.limit, m.metric
		if m.limit != nil {
			descs[i].quota = isQuota(cfg.Settings, m.limit) && cfg.Settings.Design != "central-counter"
			descs[i].counter = counterKey(cfg.Settings, descs[i].quota, domain, entries, m.shared, m.limit)
		}
		if m.limit != nil {
			for _, r := range m.limit.Replaces {
				replaced[r] = true
			}
		}
	}
	for i, d := range descs {
		if d.limit != nil && d.limit.Name != "" && replaced[d.limit.Name] {
			descs[i].limit = nil
		}
	}
	return descs, nil
}

// pbEntries are a request descriptor's entries as an entrySource.
type pbEntries []*rlv3.RateLimitDescriptor_Entry

func (e pbEntries) Len() int                  { return len(e) }
func (e pbEntries) At(i int) (string, string) { return e[i].GetKey(), e[i].GetValue() }

// counterKey names a descriptor's counter: its domain and every key and
// value (the shared ones under their wildcard value), as
// envoyproxy/ratelimit keys its cache. central-counter uses upstream's
// exact layout, the prefix and "domain_key_value_..._" to which the store
// adds the window's start, and so do quota descriptors, which it counts
// whatever the design (quota.go); the other designs
// "domain.key_value.key...|UNIT" (the unit, not the limit: a changed limit
// keeps the count). One allocation, the key itself.
func counterKey[E entrySource](set Settings, quota bool, domain string, es E, shared []string, lim *RateLimit) string {
	var buf [256]byte
	b := buf[:0]
	upstream := set.Design == "central-counter" || quota
	if upstream {
		b = append(append(append(b, set.CacheKeyPrefix...), domain...), '_')
	} else {
		b = append(append(b, domain...), '.')
	}
	for i := 0; i < es.Len(); i++ {
		k, v := es.At(i)
		if shared != nil && shared[i] != "" {
			v = shared[i]
		}
		switch {
		case upstream:
			b = append(append(append(append(b, k...), '_'), v...), '_')
		default:
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, k...)
			if v != "" {
				b = append(append(b, '_'), v...)
			}
		}
	}
	mult := max(lim.UnitMultiplier, 1)
	switch {
	case !upstream:
		b = append(append(b, '|'), lim.Unit.String()...)
		if mult > 1 {
			b = strconv.AppendUint(append(b, '*'), uint64(mult), 10)
		}
	case mult > 1: // upstream has no multiplier: a key of its own
		b = strconv.AppendUint(append(b, 'x'), uint64(mult), 10)
		b = append(b, '_')
	}
	return string(b)
}

// countAll counts every limited descriptor. With StopIncrement (central-
// counter only), it first reads every counter and, if some descriptor
// would go over, counts the request only against those that would, as
// envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT does.
func (s *Service) countAll(ctx context.Context, cfg *Config, req *pb.RateLimitRequest, descs []descriptor) error {
	var wouldOver []bool
	if cfg.Settings.StopIncrement {
		wouldOver = make([]bool, len(descs))
		anyOver := false
		for i, d := range descs {
			if d.limit == nil || d.limit.Unlimited {
				continue
			}
			dec, err := s.count(ctx, d, 0)
			if err != nil {
				return countError(i, err)
			}
			per := uint64(d.limit.Part(dec.Bound).RequestsPerUnit)
			used := per - uint64(dec.Remaining)
			if !dec.Allowed || used+d.hits > per {
				wouldOver[i], anyOver = true, true
			}
		}
		if !anyOver {
			wouldOver = nil
		}
	}
	for i := range descs {
		d := &descs[i]
		if d.limit == nil || d.limit.Unlimited {
			continue
		}
		add := d.hits
		if wouldOver != nil && !wouldOver[i] {
			add = 0
		}
		dec, err := s.count(ctx, *d, add)
		if err != nil {
			return countError(i, err)
		}
		s.setStatus(cfg, req, d, dec)
	}
	return nil
}

// countError is the status of descriptor i's failed count: UNAVAILABLE
// when the service is shutting down (its limiter closed, nothing counted),
// INTERNAL otherwise.
func countError(i int, err error) error {
	if errors.Is(err, limiter.ErrClosed) {
		return status.Errorf(codes.Unavailable, "descriptor %d: %v", i, err)
	}
	return status.Errorf(codes.Internal, "descriptor %d: %v", i, err)
}

// count counts add hits against d's counter (0: checks only), on the
// quota limiter for a quota descriptor.
func (s *Service) count(ctx context.Context, d descriptor, add uint64) (limiter.Decision, error) {
	lim := d.limit
	if lim.RequestsPerUnit == 0 {
		return limiter.Decision{Allowed: false, At: s.lim.Now()}, nil
	}
	l, buckets := s.lim, s.lim.WindowBuckets()
	if d.quota {
		var err error
		if l, err = s.quotaLimiter(); err != nil {
			return limiter.Decision{}, err
		}
		buckets = 0
	}
	if len(lim.Also) > 0 {
		return countSeveral(ctx, l, d, add)
	}
	one := limiter.Limit{Requests: int(lim.RequestsPerUnit), Window: lim.Window(), Buckets: buckets}
	if add == 0 {
		return l.Check(ctx, d.counter, one)
	}
	return l.AllowLimit(ctx, d.counter, one, int(min(add, math.MaxInt32)))
}

// countSeveral is count on l for a descriptor with several limits
// (rate_limits): admitted only if every one admits it, counted against them
// only then. Decision.Bound names the limit that binds.
func countSeveral(ctx context.Context, l *limiter.Limiter, d descriptor, add uint64) (limiter.Decision, error) {
	lims := make([]limiter.Limit, 1+len(d.limit.Also))
	for i := range lims {
		p := d.limit.Part(i)
		if p.RequestsPerUnit == 0 { // refuses every request, as a single limit of 0 does
			return limiter.Decision{Allowed: false, At: l.Now(), Bound: i}, nil
		}
		lims[i] = limiter.Limit{Requests: int(p.RequestsPerUnit), Window: p.Window()}
	}
	if add == 0 {
		return l.CheckLimits(ctx, d.counter, lims)
	}
	return l.AllowLimits(ctx, d.counter, lims, int(min(add, math.MaxInt32)))
}

// setStatus fills d's status from its decision and counts its outcome.
func (s *Service) setStatus(cfg *Config, req *pb.RateLimitRequest, d *descriptor, dec limiter.Decision) {
	lim := d.limit
	bound := lim.Part(dec.Bound) // the limit that binds, of several
	st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK,
		CurrentLimit: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: bound.RequestsPerUnit,
			Unit: pb.RateLimitResponse_RateLimit_Unit(bound.Unit), Name: bound.Name},
		DurationUntilReset: durationpb.New(untilReset(d.windowKind(cfg.Settings), bound.Window(), dec))}
	over := !dec.Allowed
	outcome := within
	switch {
	case over && lim.ShadowMode:
		outcome = shadow
	case over:
		outcome = overLimit
		st.Code = pb.RateLimitResponse_OVER_LIMIT
	default:
		st.LimitRemaining = uint32(max(dec.Remaining, 0))
		if float64(uint64(bound.RequestsPerUnit)-uint64(st.LimitRemaining)) >= cfg.Settings.NearRatio*float64(bound.RequestsPerUnit) {
			outcome = near
		}
	}
	d.status, d.win = st, bound.Window()
	m := s.metricsFor(cfg)
	if c := m.domains[req.GetDomain()]; c != nil {
		c[outcome].Inc()
	} else {
		s.decided.WithLabelValues("unconfigured", outcomeNames[outcome]).Inc()
	}
	if c := m.limits[d.metric]; c != nil && d.metric == lim.FullKey {
		c[outcome].Inc()
		return
	}
	name := d.metric
	if name != lim.FullKey {
		name = s.detailed.label(name, lim.FullKey+"_other")
	}
	s.perLimit.WithLabelValues(name, outcomeNames[outcome]).Inc()
}

// The outcomes of a decision, as metric labels.
const (
	within = iota
	near
	overLimit
	shadow
)

var outcomeNames = [...]string{"within", "near", "over", "shadow"}

// outcomes are one label's counters, by outcome.
type outcomes [len(outcomeNames)]prometheus.Counter

// boundMetrics are the counters of one configuration's domains and limits,
// looked up once per configuration rather than by label on every request.
type boundMetrics struct {
	cfg     *Config
	domains map[string]*outcomes // by domain
	limits  map[string]*outcomes // by FullKey, overrides' included
}

// metricsFor returns cfg's counters, binding them on first use.
func (s *Service) metricsFor(cfg *Config) *boundMetrics {
	if m := s.bound.Load(); m != nil && m.cfg == cfg {
		return m
	}
	m := &boundMetrics{cfg: cfg, domains: map[string]*outcomes{}, limits: map[string]*outcomes{}}
	bind := func(vec *prometheus.CounterVec, label string) *outcomes {
		var o outcomes
		for i, n := range outcomeNames {
			o[i] = vec.WithLabelValues(label, n)
		}
		return &o
	}
	for _, d := range cfg.Domains() {
		m.domains[d] = bind(s.decided, d)
		m.limits[d+".override"] = bind(s.perLimit, d+".override")
	}
	for _, l := range cfg.Limits() {
		m.limits[l.FullKey] = bind(s.perLimit, l.FullKey)
	}
	s.bound.Store(m)
	return m
}

// windowKind is the kind of d's window: fixed for a quota, which upstream's
// algorithm counts, else the settings'.
func (d *descriptor) windowKind(set Settings) window.Kind {
	if d.quota {
		return window.Fixed
	}
	return set.WindowKind
}

// untilReset is a descriptor's duration_until_reset: for a fixed window
// its end, in whole seconds of Unix time as envoyproxy/ratelimit says it
// (a minute's window at 12.3 s says 48 s); for a sliding one the time
// until this gateway's view frees budget.
func untilReset(kind window.Kind, w time.Duration, dec limiter.Decision) time.Duration {
	if kind != window.Fixed {
		return dec.Reset
	}
	div := int64(w / time.Second)
	sec := dec.At.Unix()
	return time.Duration(div-sec%div) * time.Second
}

// respond assembles the response of counted descriptors.
func (s *Service) respond(cfg *Config, req *pb.RateLimitRequest, descs []descriptor) *pb.RateLimitResponse {
	set := cfg.Settings
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(descs))}
	var tightest *pb.RateLimitResponse_DescriptorStatus
	var tightWin time.Duration // its limit's window
	overRate, quotas, overQuotas := false, 0, 0
	var passed []*RateLimit
	for i, d := range descs {
		switch {
		case d.limit == nil:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
			continue
		case d.limit.Unlimited:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		}
		st := d.status
		resp.Statuses[i] = st
		if tightest == nil || st.LimitRemaining < tightest.LimitRemaining {
			tightest, tightWin = st, d.win
		}
		quota := set.QuotaMode || d.limit.QuotaMode
		if quota {
			quotas++
		}
		switch {
		case st.Code != pb.RateLimitResponse_OVER_LIMIT:
			passed = append(passed, d.limit)
		case quota:
			overQuotas++
		default:
			overRate, tightest, tightWin = true, st, d.win
		}
	}
	if overRate || (quotas > 0 && quotas == overQuotas) {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	}
	if set.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
	}
	if set.ResponseHeaders && tightest != nil {
		resp.ResponseHeadersToAdd = rateLimitHeaders(set, tightest, tightWin)
	}
	if set.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, passed)
	}
	return resp
}

// rateLimitHeaders are the response headers of the tightest status, in
// the configured style; w is its limit's window.
func rateLimitHeaders(set Settings, st *pb.RateLimitResponse_DescriptorStatus, w time.Duration) []*corev3.HeaderValue {
	limit := uint64(st.CurrentLimit.GetRequestsPerUnit())
	reset := int64(math.Ceil(st.GetDurationUntilReset().AsDuration().Seconds()))
	if set.Headers == HeadersLegacy {
		return []*corev3.HeaderValue{
			{Key: cmp.Or(set.LimitHeader, "RateLimit-Limit"), Value: strconv.FormatUint(limit, 10)},
			{Key: cmp.Or(set.RemainingHeader, "RateLimit-Remaining"), Value: strconv.FormatUint(uint64(st.LimitRemaining), 10)},
			{Key: cmp.Or(set.ResetHeader, "RateLimit-Reset"), Value: strconv.FormatInt(reset, 10)},
		}
	}
	name := st.CurrentLimit.GetName()
	window := int64(w / time.Second)
	return []*corev3.HeaderValue{
		{Key: "RateLimit-Policy", Value: policy.PolicyField(name, limit, window)},
		{Key: "RateLimit", Value: policy.LimitField(name, uint64(st.LimitRemaining), reset)},
	}
}
