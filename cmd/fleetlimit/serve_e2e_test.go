package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// TestMain lets the test binary run as the fleetlimit command, so that the
// end-to-end test can start real serve processes without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("FLEETLIMIT_E2E_CHILD") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func freeAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(redistest.FreePort(t)))
}

const e2eConfig = `domain: e2e
descriptors:
  - key: client
    rate_limit:
      unit: hour
      requests_per_unit: %d
fleetlimit:
  design: %s
  sync: 100ms
  response_headers: true
  headers: legacy
`

// Three fleetlimit serve processes on loopback share one real redis-server
// as the gateways of one fleet; a gRPC client built from go-control-plane's
// types drives them, and the limit is changed by a reload in the middle. Run
// for lease-ask, exact, and for headroom, which may pass the limit by its
// gateways' local budgets (docs/design.md): here, with a few hundred
// requests over an hour's window, each budget is at most
// ceil(m + 2 sqrt(m)) + 1 = 2 (m, the arrivals per 100 ms sync interval
// averaged over the hour, is far below one), so at most 2K over; and for
// permit, whose lent slots may pass it by ⌊t·L⌋ = 5.
func TestServeFleetEndToEnd(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	for _, d := range []struct {
		name  string
		slack func(limit int) int
	}{
		{"lease-ask", func(int) int { return 0 }},
		{"headroom", func(int) int { return 2 * 3 }},
		{"permit", func(limit int) int { return int(math.Floor(design.PermitTolerance * float64(limit))) }},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			serveFleet(t, d.name, d.slack)
		})
	}
}

// serveFleet is TestServeFleetEndToEnd for one design, which may pass a
// limit L by slack(L).
func serveFleet(t *testing.T, design string, slack func(limit int) int) {
	srv := redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	writeCfg := func(limit int) {
		tmp := cfgPath + ".tmp"
		if err := os.WriteFile(tmp, []byte(fmt.Sprintf(e2eConfig, limit, design)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfgPath); err != nil { // atomic, as config managers do
			t.Fatal(err)
		}
	}
	writeCfg(50)

	const k = 3
	clients, https, procs := startFleet(t, cfgPath, srv.Addr, k)
	// A request whose store call outlives serve's --timeout (a starved
	// machine) is decided by the fallback, which the design's bound does not
	// cover: each such decision may admit one request more.
	fallback := func() int {
		n := int(metricSum(t, https, "fleetlimit_fallback_decisions_total"))
		if n > 0 {
			t.Logf("%d requests were decided by the fallback", n)
		}
		return n
	}

	req := &pb.RateLimitRequest{Domain: "e2e", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: "alice"}}}}}
	// drive sends n requests spread over the fleet from 6 goroutines and
	// returns how many were admitted and the last response of each kind.
	drive := func(n int) (admitted int, ok, over *pb.RateLimitResponse) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += 6 {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					r, err := clients[i%k].ShouldRateLimit(ctx, req)
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if r.OverallCode == pb.RateLimitResponse_OK {
						admitted++
						ok = r
					} else {
						over = r
					}
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		return
	}

	admitted, ok, over := drive(300)
	t.Logf("limit 50 an hour: %d of 300 admitted by the fleet", admitted)
	if most := 50 + slack(50) + fallback(); admitted > most || admitted < 40 {
		t.Fatalf("%s fleet admitted %d with a limit of 50 (want at most %d, and most of it used)", design, admitted, most)
	}
	if ok == nil || over == nil {
		t.Fatal("no OK or no OVER_LIMIT response")
	}
	st := over.Statuses[0]
	if st.Code != pb.RateLimitResponse_OVER_LIMIT || st.CurrentLimit.GetRequestsPerUnit() != 50 ||
		st.CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_HOUR || st.DurationUntilReset.AsDuration() > time.Hour {
		t.Fatalf("over-limit status %v", st)
	}
	hd := map[string]string{}
	for _, h := range over.ResponseHeadersToAdd {
		hd[h.Key] = h.Value
	}
	if hd["RateLimit-Limit"] != "50" || hd["RateLimit-Remaining"] != "0" || hd["RateLimit-Reset"] == "" {
		t.Fatalf("response headers %v", hd)
	}

	// Reload: a new limit, which every process must pick up.
	writeCfg(80)
	deadline := time.Now().Add(10 * time.Second)
	for c := 0; c < k; c++ {
		for {
			r, err := clients[c].ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "e2e",
				Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: "probe"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Statuses[0].CurrentLimit.GetRequestsPerUnit() == 80 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve %d still has the old limit after the reload", c)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The counts are kept across the change, as envoyproxy/ratelimit keeps
	// them: what the first 50 used still counts against the 80.
	before := admitted
	admitted, _, _ = drive(300)
	t.Logf("after the reload to 80 an hour: %d more of 300 admitted", admitted)
	if before+admitted > 80+slack(80)+fallback() || before+admitted < 64 {
		t.Fatalf("after the reload the fleet admitted %d more, %d in all with a limit of 80", admitted, before+admitted)
	}

	// Graceful shutdown flushes and exits 0.
	for i, p := range procs {
		if err := stopServe(p, 10*time.Second); err != nil {
			t.Fatalf("serve %d %v", i, err)
		}
	}
}

// stopServe stops a serve process with SIGTERM and waits up to wait for it
// to exit; an error says how it exited, or that it did not.
func stopServe(p *exec.Cmd, wait time.Duration) error {
	p.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("exited with %v", err)
		}
		return nil
	case <-time.After(wait):
		return fmt.Errorf("did not stop")
	}
}

// testWriter sends a child's log lines to the test log.
type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	all    []byte // everything written, for tests that read the logs
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(w.prefix + string(p))
	w.all = append(w.all, p...)
	return len(p), nil
}

// text returns everything written so far.
func (w *testWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.all)
}

// startFleet starts k serve processes on cfgPath as the gateways of one
// fleet on the Redis at redisAddr, waits until each answers its health
// check, and returns a gRPC client and the HTTP address of each.
func startFleet(t *testing.T, cfgPath, redisAddr string, k int) ([]pb.RateLimitServiceClient, []string, []*exec.Cmd) {
	var clients []pb.RateLimitServiceClient
	var https []string
	var procs []*exec.Cmd
	for i := 0; i < k; i++ {
		c, h, p := startServeProc(t, cfgPath, redisAddr, fmt.Sprintf("serve %d: ", i), "--gateways", fmt.Sprint(k), "--gateway", fmt.Sprint(i))
		clients, https, procs = append(clients, c), append(https, h), append(procs, p)
	}
	return clients, https, procs
}

// startServeProc starts one serve process on redisAddr with extra flags, waits
// until it answers, and returns a gRPC client, its HTTP address and the
// process; its log lines go to the test's, prefixed.
func startServeProc(t *testing.T, cfgPath, redisAddr, prefix string, extra ...string) (pb.RateLimitServiceClient, string, *exec.Cmd) {
	return startServeBin(t, "", cfgPath, redisAddr, prefix, extra...)
}

// startServeBin is startServeProc with the fleetlimit binary bin, or this
// test binary if bin is "".
func startServeBin(t *testing.T, bin, cfgPath, redisAddr, prefix string, extra ...string) (pb.RateLimitServiceClient, string, *exec.Cmd) {
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	args := append([]string{"serve", "--config", cfgPath, "--redis", redisAddr,
		"--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--reload-interval", "50ms"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1")
	if bin != "" {
		cmd = exec.Command(bin, args...)
	}
	cmd.Stderr = &testWriter{t: t, prefix: prefix}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/healthcheck")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%sdid not come up: %v", prefix, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewRateLimitServiceClient(conn), httpAddr, cmd
}
