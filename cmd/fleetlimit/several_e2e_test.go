package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// severalE2E is upstream's issue #262 scaled down: a burst limit and a
// sustained one on each account, served by central-log, whose every
// decision is the store's.
const severalE2E = `domain: api
descriptors:
  - key: account_id
    rate_limits:
      - {unit: second, requests_per_unit: 3, name: burst}
      - {unit: hour, requests_per_unit: 5, name: hourly}
fleetlimit:
  design: central-log
  window_kind: sliding
`

// Two serve processes on one redis-server, from a YAML file with
// rate_limits: a burst of 6 requests over both gets the burst limit's 3,
// the rest refused naming it; a second later 2 more fit the hour's 5 (the
// refused 3 spent none of it), and the next is refused naming the hour.
func TestServeSeveralLimitsEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte(severalE2E), 0o644); err != nil {
		t.Fatal(err)
	}
	clients, _, _ := startFleet(t, cfgPath, srv.Addr, 2)
	req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "account_id", Value: "acct-1"}}}}}
	ask := func(i int) (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := clients[i%2].ShouldRateLimit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.OverallCode == pb.RateLimitResponse_OK, r.Statuses[0].GetCurrentLimit().GetName()
	}
	admitted, start := 0, time.Now()
	for i := range 6 {
		ok, name := ask(i)
		if ok {
			admitted++
		} else if name != "burst" {
			t.Fatalf("request %d refused naming %q, want burst", i+1, name)
		}
	}
	// Six calls take milliseconds; on a machine so busy that they spread
	// past a second, the burst limit may admit more, never the hour's.
	if span := time.Since(start); (span < time.Second && admitted != 3) || admitted < 3 || admitted > 5 {
		t.Fatalf("%d of a burst of 6 admitted in %v, want the burst limit's 3", admitted, span)
	}
	time.Sleep(1100 * time.Millisecond)
	for i := range 6 - admitted {
		ok, name := ask(i)
		if admitted < 5 && !ok {
			t.Fatalf("a second later, request %d refused by %q with %d of the hour's 5 admitted: refused requests spent it", i+1, name, admitted)
		}
		if ok {
			admitted++
			continue
		}
		if admitted != 5 || name != "hourly" {
			t.Fatalf("refused with %d admitted naming %q, want 5 admitted and the hourly limit", admitted, name)
		}
		return
	}
	t.Fatalf("%d admitted against the hour's 5", admitted)
}
