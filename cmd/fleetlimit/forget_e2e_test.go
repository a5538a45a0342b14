package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

const forgetConfig = `domain: e2e
descriptors:
  - key: client
    rate_limit:
      unit: minute
      requests_per_unit: 100
fleetlimit:
  design: %s
  window_kind: sliding
  sync: 200ms
`

// Redis loses its data mid-window (FLUSHALL; a restart without persistence)
// while three serve processes take 25 requests a second on each of four
// keys of L = 100 a minute (full before the loss): each key's worst window stays within L plus
// one sync interval's arrivals and the rounding (it was 2 L), and every
// process says so in one log line and counts the lost keys in
// fleetlimit_store_forgotten_keys_total, within a second of the loss.
func TestServeStoreThatForgets(t *testing.T) {
	for _, how := range []string{"flushall", "restart"} {
		for _, design := range []string{"central-log", "headroom"} {
			t.Run(how+"/"+design, func(t *testing.T) {
				t.Parallel()
				serveForget(t, how, design)
			})
		}
	}
}

func serveForget(t *testing.T, how, design string) {
	srv := redistest.Start(t) // no persistence
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(forgetConfig, design)), 0o644); err != nil {
		t.Fatal(err)
	}
	const k, keys, rate, limit = 3, 4, 25.0, 100
	var clients []pb.RateLimitServiceClient
	var https []string
	var logs []*testWriter
	for i := range k {
		c, h, p := startServeProc(t, cfgPath, srv.Addr, fmt.Sprintf("serve %d: ", i), "--gateways", fmt.Sprint(k), "--gateway", fmt.Sprint(i))
		clients, https, logs = append(clients, c), append(https, h), append(logs, p.Stderr.(*testWriter))
	}
	var mu sync.Mutex
	admits := make([][]int64, keys)
	stop := time.Now().Add(14 * time.Second)
	var wg sync.WaitGroup
	for key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &pb.RateLimitRequest{Domain: "e2e", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: fmt.Sprint("key-", key)}}}}}
			for i := 0; time.Now().Before(stop); i++ {
				sent := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := clients[(i+key)%k].ShouldRateLimit(ctx, req)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if r.OverallCode == pb.RateLimitResponse_OK {
					mu.Lock()
					admits[key] = append(admits[key], sent.UnixNano())
					mu.Unlock()
				}
				time.Sleep(time.Until(sent.Add(time.Duration(float64(time.Second) / rate))))
			}
		}()
	}
	time.Sleep(6 * time.Second)
	lost := time.Now()
	srv.Forget(how)
	// within a second (five syncs), every process has counted the loss
	for time.Since(lost) < time.Second && metricSum(t, https, "fleetlimit_store_forgotten_keys_total") < k {
		time.Sleep(50 * time.Millisecond)
	}
	found := time.Since(lost)
	wg.Wait()
	for i, h := range https {
		if n := metricSum(t, []string{h}, "fleetlimit_store_forgotten_keys_total"); n < 1 {
			t.Errorf("serve %d: fleetlimit_store_forgotten_keys_total %v, want the lost keys counted", i, n)
		}
		if n := strings.Count(logs[i].text(), "the store lost keys' windows"); n != 1 {
			t.Errorf("serve %d: %d log lines about the loss, want one", i, n)
		}
	}
	// The decisions are timed at the client: windows of W less a second
	// hold them on the processes' clocks too. L, the rounding K, one sync
	// interval's arrivals (5), and headroom's local budgets (at most
	// ceil(m + 2 sqrt(m)) + 1 = 3 a gateway, m being its arrivals in an
	// interval, 5/3).
	bound := limit + k + int(rate*0.2)
	if design == "headroom" {
		bound += 3 * k
	}
	for key, ts := range admits {
		slices.Sort(ts)
		w := worstIn(ts, int64(time.Minute-time.Second))
		t.Logf("key %d: %d admitted, worst window %d of L = %d (bound %d); the loss found within %v", key, len(ts), w, limit, bound, found.Round(time.Millisecond))
		if w > bound {
			t.Errorf("key %d: %d admitted in a window, over %d", key, w, bound)
		}
	}
}

// worstIn is the most of ts (ascending) in any (t − w, t].
func worstIn(ts []int64, w int64) int {
	best, lo := 0, 0
	for hi, t := range ts {
		for ts[lo] <= t-w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}
