package rls

import (
	"io"
	"log/slog"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetlimit/fleetlimit/limiter"
)

const compatConfig = `domain: m
descriptors:
  - key: user
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /v1/*
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: route
    value: /v2/*
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: org
    descriptors:
      - key: team
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: check
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: q1
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q2
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`

// Metric names as upstream builds them: value_to_metric puts the request's
// value in, a wildcard without it keeps the pattern, and detailed_metric
// names every entry's value, not only the last.
func TestMetricNamesAsUpstream(t *testing.T) {
	c, svc := serve(t, compatConfig)
	for _, d := range []*rlv3.RateLimitDescriptor{desc("user", "alice"), desc("path", "/v1/x"), desc("route", "/v2/y"), desc("org", "acme", "team", "red")} {
		call(t, c, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{d}})
	}
	for _, name := range []string{"m.user_alice", "m.path_/v1/*", "m.route_/v2/y", "m.org_acme.team_red"} {
		if v := testutil.ToFloat64(svc.perLimit.WithLabelValues(name, "within")); v != 1 {
			t.Errorf("decisions of %s: %v, want 1", name, v)
		}
	}
}

// A descriptor's hits_addend of 0 checks without counting; an answer over
// the limit says 0 remaining.
func TestCheckOnlyAndOverLimitAnswers(t *testing.T) {
	c, _ := serve(t, compatConfig)
	req := func(hits uint64) *pb.RateLimitResponse_DescriptorStatus {
		d := desc("check", "k")
		d.HitsAddend = wrapperspb.UInt64(hits)
		return call(t, c, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{d}}).Statuses[0]
	}
	for i, want := range []struct {
		hits uint64
		code pb.RateLimitResponse_Code
		rem  uint32
	}{{0, ok, 2}, {0, ok, 2}, {1, ok, 1}, {1, ok, 0}, {0, over, 0}, {1, over, 0}} {
		st := req(want.hits)
		if st.Code != want.code || st.LimitRemaining != want.rem {
			t.Fatalf("request %d (hits %d): %v, want %v with %d remaining", i+1, want.hits, st, want.code, want.rem)
		}
	}
}

// Quotas: over one quota alone the request passes; over every quota it
// does not. SHADOW_MODE answers OK to all.
func TestQuotaAndGlobalShadowMode(t *testing.T) {
	c, svc := serve(t, compatConfig)
	both := &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{desc("q1", "a"), desc("q2", "a")}}
	one := &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{desc("q1", "b"), desc("q2", "c")}}
	if r := call(t, c, both); r.OverallCode != ok {
		t.Fatalf("first: %v", r)
	}
	call(t, c, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{desc("q1", "b")}})
	if r := call(t, c, one); r.OverallCode != ok || r.Statuses[0].Code != over {
		t.Fatalf("over one quota of two: %v, want OK overall, the quota's status OVER_LIMIT", r)
	}
	if r := call(t, c, both); r.OverallCode != over {
		t.Fatalf("over both quotas: %v", r)
	}
	cfg := *svc.Config()
	cfg.Settings.ShadowMode = true
	svc.SetConfig(&cfg)
	if r := call(t, c, both); r.OverallCode != ok || r.Statuses[0].Code != over {
		t.Fatalf("shadow mode: %v, want OK overall with the statuses as they are", r)
	}
}

// The legacy headers under upstream's LIMIT_*_HEADER names.
func TestLegacyHeaderNames(t *testing.T) {
	c, svc := serve(t, compatConfig)
	cfg := *svc.Config()
	cfg.Settings.ResponseHeaders, cfg.Settings.Headers, cfg.Settings.RemainingHeader = true, HeadersLegacy, "X-Left"
	svc.SetConfig(&cfg)
	r := call(t, c, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{desc("check", "h")}})
	hd := map[string]string{}
	for _, h := range r.ResponseHeadersToAdd {
		hd[h.Key] = h.Value
	}
	if hd["RateLimit-Limit"] != "2" || hd["X-Left"] != "1" || hd["RateLimit-Reset"] == "" || len(hd) != 3 {
		t.Fatalf("headers %v", hd)
	}
}

const (
	ok   = pb.RateLimitResponse_OK
	over = pb.RateLimitResponse_OVER_LIMIT
)

// lease-ask's limit_remaining is what the store's count leaves of the
// limit, not the slots it happens to hold (it said 0 on admitted requests).
func TestLeaseAskRemaining(t *testing.T) {
	c, _ := serveWith(t, "domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n",
		limiter.Config{Design: "lease-ask", Sync: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i := 1; i <= 3; i++ {
		st := call(t, c, &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "v")}}).Statuses[0]
		if st.Code != ok || st.LimitRemaining != uint32(1000-i) {
			t.Fatalf("request %d: %v, want OK with %d remaining", i, st, 1000-i)
		}
	}
}

// fleetlimit's own settings are checked, whatever sets them.
func TestSettingsBounds(t *testing.T) {
	for _, set := range []Settings{{MaxKeys: -1}, {MaxKeys: MaxKeys + 1}, {ClaimTTL: time.Millisecond}, {ClaimTTL: 2 * time.Hour},
		{Headers: "both"}, {StopIncrement: true}} {
		s := DefaultSettings()
		if set.MaxKeys != 0 {
			s.MaxKeys = set.MaxKeys
		}
		if set.ClaimTTL != 0 {
			s.ClaimTTL = set.ClaimTTL
		}
		if set.Headers != "" {
			s.Headers = set.Headers
		}
		s.StopIncrement = set.StopIncrement
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: accepted", set)
		}
	}
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}
