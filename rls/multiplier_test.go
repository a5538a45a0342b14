package rls

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// clock is a settable clock for the limiter, from an hour's start in Unix
// time (fixed windows of a second, a minute and an hour all start there).
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(1_800_000_000 * int64(time.Second)) // a multiple of 3600 s
	return c
}

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// servedLimiter is the limiter serve makes for src's settings (fixed
// windows, as upstream), on clk.
func servedLimiter(t *testing.T, src string, clk *clock) limiter.Config {
	lc := parse(t, src).Settings.Limiter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	lc.Now = clk.now
	return lc
}

const multiplierConfig = `
domain: d
descriptors:
  - key: report
    rate_limit:
      unit: second
      requests_per_unit: 1
      unit_multiplier: 3600
`

// An override's unit_multiplier makes its window that many units, over
// gRPC: 1 per second × 3600 is one an hour, with duration_until_reset to
// the hour's end; the same override without a multiplier is another
// limit, counted apart.
func TestOverrideUnitMultiplierGRPC(t *testing.T) {
	clk := newClock()
	c, _ := serveWith(t, testConfig, servedLimiter(t, testConfig, clk))
	hourly := desc("anything", "x")
	hourly.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND,
		UnitMultiplier: wrapperspb.UInt32(3600)}
	ask := func(d *rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
		return call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{d}})
	}
	clk.add(10 * time.Second)
	if r := ask(hourly); r.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("first: %v", r)
	}
	clk.add(1500 * time.Millisecond)
	r := ask(hourly)
	if r.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("1.5 s later: %v, want OVER_LIMIT (one an hour)", r)
	}
	if got := r.Statuses[0].DurationUntilReset.AsDuration(); got != 3589*time.Second {
		t.Fatalf("duration_until_reset %v, want 3589s (the hour's end)", got)
	}
	plain := desc("anything", "x")
	plain.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND}
	if r := ask(plain); r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].DurationUntilReset.AsDuration() != time.Second {
		t.Fatalf("1 per second without the multiplier: %v, want OK and a second", r)
	}
	clk.add(3589 * time.Second) // the next hour
	if r := ask(hourly); r.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("the next hour: %v", r)
	}
	zero := desc("anything", "y")
	zero.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND,
		UnitMultiplier: wrapperspb.UInt32(0)}
	if _, err := c.ShouldRateLimit(t.Context(), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{zero}}); err == nil ||
		!strings.Contains(err.Error(), "unit_multiplier 0") {
		t.Fatalf("unit_multiplier 0: %v, want INVALID_ARGUMENT naming it", err)
	}
}

// The same over /json, and from YAML, where unit_multiplier is a
// fleetlimit extension.
func TestUnitMultiplierJSONAndYAML(t *testing.T) {
	clk := newClock()
	_, svc := serveWith(t, multiplierConfig, servedLimiter(t, multiplierConfig, clk))
	h := svc.Handler()
	post := func(body string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/json", strings.NewReader(body)))
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	override := `{"domain":"d","descriptors":[{"entries":[{"key":"other","value":"z"}],
		"limit":{"requests_per_unit":1,"unit":"MINUTE","unit_multiplier":60}}]}`
	yaml := `{"domain":"d","descriptors":[{"entries":[{"key":"report","value":"q1"}]}]}`
	clk.add(30 * time.Second)
	for _, body := range []string{override, yaml} {
		if code, out := post(body); code != 200 {
			t.Fatalf("first %s: %d %v", body, code, out)
		}
	}
	clk.add(90 * time.Second) // past the minute and past a second
	for _, c := range []struct {
		body  string
		reset string
	}{{override, "3480s"}, {yaml, "3480s"}} {
		code, out := post(c.body)
		st := out["statuses"].([]any)[0].(map[string]any)
		if code != 429 || st["durationUntilReset"] != c.reset {
			t.Fatalf("%s 2 minutes later: %d %v, want 429 and %s until the hour's end", c.body, code, out, c.reset)
		}
	}
	lim := svc.cfg.Load().Limits()[0]
	if got := lim.String(); !strings.Contains(got, "1 per SECOND × 3600 (1h0m0s)") {
		t.Fatalf("validate's line: %q", got)
	}
	for _, bad := range []string{"0", "-1", "many", "[1]"} {
		src := strings.Replace(multiplierConfig, "unit_multiplier: 3600", "unit_multiplier: "+bad, 1)
		if _, err := Parse("bad.yaml", strings.NewReader(src)); err == nil || !strings.Contains(err.Error(), "unit_multiplier") {
			t.Errorf("unit_multiplier %s: %v, want an error naming it", bad, err)
		}
	}
}
