package main

import (
	"bufio"
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/internal/simtest"
	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

const headroomConfig = `domain: hr
descriptors:
  - key: client
    rate_limit:
      unit: second
      requests_per_unit: 50
fleetlimit:
  design: headroom
  sync: 100ms
`

// roundTrips sums fleetlimit_store_round_trips_total over the processes.
func roundTrips(t *testing.T, https []string) float64 {
	return metricSum(t, https, "fleetlimit_store_round_trips_total")
}

// metricSum sums an unlabelled metric over the processes' /metrics.
func metricSum(t *testing.T, https []string, name string) float64 {
	var sum float64
	for _, a := range https {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				sum += f
			}
		}
		resp.Body.Close()
	}
	return sum
}

// Three serve processes running headroom on one real redis-server (L = 50
// a second in serve's fixed windows, as envoyproxy/ratelimit counts, Δ =
// 100 ms), driven over gRPC by a flood and by honest traffic:
// the live figures against the simulator's for the same K, Δ, limit, window
// and traffic. admitted_x within 10% of the simulator's mean; honest
// rejections and round trips, which swing run to run with how close the
// count comes to L, within three standard deviations of the simulator's
// seeds (or 10%, where they hardly vary): one live run is one draw.
func TestServeHeadroomAgainstTheSimulator(t *testing.T) {
	srv := redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte(headroomConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		k     = 3
		limit = 50
		win   = time.Second
		delta = 100 * time.Millisecond
	)
	clients, https, _ := startFleet(t, cfgPath, srv.Addr, k)
	ask := func(g int, value string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := clients[g].ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "hr", Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: value}}}}})
		if err != nil {
			t.Error(err)
			return false
		}
		return r.OverallCode == pb.RateLimitResponse_OK
	}
	// simulate returns the simulator's mean figures over seeds, and the
	// standard deviation over the seeds of round_trip_pct and rejected_pct.
	simulate := func(tr sim.Traffic, d time.Duration, seeds int) (sim.Figures, [2]float64) {
		return simtest.Seeds(t, sim.Params{Design: "headroom", Gateways: k, Sync: delta, Limit: limit, Window: win,
			WindowKind: window.Fixed, Traffic: tr, Duration: d}, seeds)
	}

	t.Run("flood", func(t *testing.T) {
		const rate, length = 500.0, 6 * time.Second // flood:10
		var mu sync.Mutex
		admitted := 0
		var wg sync.WaitGroup
		// serve counts in fixed windows on the wall clock: start on a
		// window's boundary, so that the run covers length/W whole
		// windows, as the simulator's does (a run started mid-window
		// touches one more, and a flood fills each).
		start := time.Now().Truncate(win).Add(win)
		for g := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					at := time.Duration(float64(i) / (rate / k) * float64(time.Second))
					if at >= length {
						return
					}
					time.Sleep(time.Until(start.Add(at)))
					if ask(g, "flood") {
						mu.Lock()
						admitted++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		x := float64(admitted) / (float64(length) / float64(win)) / limit
		f, _ := simulate(sim.Traffic{Kind: sim.Flood, Factor: rate * win.Seconds() / limit}, length, 10)
		t.Logf("live: admitted_x %.3f; simulator over 10 seeds: %.3f (fallback decisions %.0f, store errors %.0f)", x, f.AdmittedX,
			metricSum(t, https, "fleetlimit_fallback_decisions_total"), metricSum(t, https, "fleetlimit_store_errors_total"))
		if x < 0.9*f.AdmittedX || x > 1.1*f.AdmittedX {
			t.Fatalf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", x, f.AdmittedX)
		}
	})

	t.Run("honest", func(t *testing.T) {
		const rate, length = 0.8 * limit, 15 * time.Second // steady:0.8
		trips0 := roundTrips(t, https)
		rng := rand.New(rand.NewPCG(11, 1))
		var mu sync.Mutex
		var wg sync.WaitGroup
		requests, admitted := 0, 0
		start := time.Now()
		for at := time.Duration(0); ; {
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
			if at >= length {
				break
			}
			g := rng.IntN(k)
			time.Sleep(time.Until(start.Add(at)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok := ask(g, "honest")
				mu.Lock()
				requests++
				if ok {
					admitted++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		trips := 100 * (roundTrips(t, https) - trips0) / float64(requests)
		rejected := 100 * float64(requests-admitted) / float64(requests)
		x := float64(admitted) / (float64(length) / float64(win)) / limit
		f, sd := simulate(sim.Traffic{Kind: sim.Steady, Factor: 0.8}, length, 20)
		t.Logf("live: %d requests, admitted_x %.3f, %.2f%% rejected, %.2f%% round trips; simulator over 20 seeds: admitted_x %.3f, "+
			"rejected %.2f%% (sd %.2f), round trips %.2f%% (sd %.2f)",
			requests, x, rejected, trips, f.AdmittedX, f.RejectedPct, sd[1], f.RoundTripPct, sd[0])
		if x < 0.9*f.AdmittedX || x > 1.1*f.AdmittedX {
			t.Fatalf("live admitted_x %.3f, simulator %.3f: more than 10%% apart", x, f.AdmittedX)
		}
		for i, c := range []struct {
			what       string
			live, simu float64
		}{{"round trips", trips, f.RoundTripPct}, {"rejections", rejected, f.RejectedPct}} {
			if d := math.Abs(c.live - c.simu); d > max(3*sd[i], 0.1*c.simu) {
				t.Fatalf("live %s %.2f%%, simulator %.2f%% (sd over its seeds %.2f): more than three sd apart", c.what, c.live, c.simu, sd[i])
			}
		}
	})
}
