package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// A configuration that names no design: serve runs the default.
const defaultDesignConfig = `domain: dd
descriptors:
  - key: client
    rate_limit:
      unit: second
      requests_per_unit: 20
`

// Eight serve processes started without --design on one real redis-server,
// a flood of 100 × L on one key spread over them: no fixed window (serve's,
// as envoyproxy/ratelimit counts) holds more admits than the default
// design's stated bound, L + ⌊0.1 L⌋. An admit is counted in a window only
// when its whole call (sent to answered) fell inside it, so the count is at
// most the window's true one: the check cannot fail on a busy machine's
// latency, only on admits past the bound.
func TestServeDefaultDesignHoldsAFlood(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	if design.Default != "permit" {
		t.Fatalf("the bound below is permit's; the default is %s", design.Default)
	}
	srv := redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte(defaultDesignConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		k      = 8
		limit  = 20
		win    = time.Second
		rate   = 100 * limit // requests a second: flood:100
		length = 4 * time.Second
	)
	bound := limit + int(math.Floor(design.PermitTolerance*limit))
	clients, https, _ := startFleet(t, cfgPath, srv.Addr, k)
	type call struct{ sent, done time.Time }
	var (
		mu     sync.Mutex
		admits []call
		asked  int
		wg     sync.WaitGroup
	)
	start := time.Now().Truncate(win).Add(win)
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &pb.RateLimitRequest{Domain: "dd", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: "flood"}}}}}
			for i := 0; ; i++ {
				at := time.Duration(float64(i) / (rate / k) * float64(time.Second))
				if at >= length {
					return
				}
				time.Sleep(time.Until(start.Add(at)))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				sent := time.Now()
				r, err := clients[g].ShouldRateLimit(ctx, req)
				done := time.Now()
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				asked++
				if r.OverallCode == pb.RateLimitResponse_OK {
					admits = append(admits, call{sent, done})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	perWindow := map[int64]int{}
	uncertain := 0
	for _, c := range admits {
		w := c.sent.UnixNano() / int64(win)
		if c.done.UnixNano()/int64(win) != w {
			uncertain++
			continue
		}
		perWindow[w]++
	}
	most := 0
	for _, n := range perWindow {
		most = max(most, n)
	}
	// A request whose store call outlives serve's --timeout (a starved
	// machine, the race detector) is decided by the fallback, which the
	// bound does not cover: each may admit one more.
	if fell := int(metricSum(t, https, "fleetlimit_fallback_decisions_total")); fell > 0 {
		t.Logf("%d requests were decided by the fallback", fell)
		bound += fell
	}
	t.Logf("%d requests, %d admitted (%d across a window's edge, not counted); most in one window %d, bound %d", asked, len(admits), uncertain, most, bound)
	if most > bound {
		t.Fatalf("a window held %d admits, over the default design's bound %d", most, bound)
	}
	if len(admits) < int(length/win)*limit/2 {
		t.Fatalf("%d admits in %v: the flood should fill most windows", len(admits), length)
	}
}
