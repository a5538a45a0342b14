// Package loadgen drives an envoy.service.ratelimit.v3 service (fleetlimit
// serve, envoyproxy/ratelimit, any other) with concurrent gRPC clients and
// measures decisions per second and latency.
//
// It must never target anything but the address it is given, and never run
// past its duration.
package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Options describe a load.
type Options struct {
	Target      string        // gRPC address
	Domain, Key string        // the domain and descriptor key of every request
	Keys        int           // distinct descriptor values, drawn uniformly
	Concurrency int           // concurrent clients
	Conns       int           // gRPC connections they share
	Duration    time.Duration // how long to run
	// CPU names processes (by PID) whose CPU time during the load to
	// report, for example the service and its Redis; this process is
	// always reported, as "loadgen".
	CPU map[string]int
}

// Validate reports the first thing wrong with o.
func (o Options) Validate() error {
	switch {
	case o.Concurrency < 1 || o.Concurrency > 10000:
		return fmt.Errorf("concurrency %d: want 1 to 10000", o.Concurrency)
	case o.Conns < 1 || o.Conns > o.Concurrency:
		return fmt.Errorf("conns %d: want 1 to the concurrency", o.Conns)
	case o.Duration <= 0 || o.Duration > time.Hour:
		return fmt.Errorf("duration %v: want more than 0 and at most 1h", o.Duration)
	case o.Keys < 1:
		return fmt.Errorf("keys %d: want at least 1", o.Keys)
	}
	return nil
}

// Report is what a load measured.
type Report struct {
	Decisions int           // answered requests
	Over      int           // of them, OVER_LIMIT
	Errors    int           // requests that failed
	Wall      time.Duration // the load's length
	Latencies []time.Duration
	// CPU is the CPU time each process of Options.CPU, and "loadgen",
	// used during the load.
	CPU map[string]time.Duration
}

// CPUPerDecision is the CPU time process name used per decision.
func (r Report) CPUPerDecision(name string) time.Duration {
	if r.Decisions == 0 {
		return 0
	}
	return r.CPU[name] / time.Duration(r.Decisions)
}

// PerSecond is the decisions per second.
func (r Report) PerSecond() float64 { return float64(r.Decisions) / r.Wall.Seconds() }

// Quantile returns the latency at quantile q of the answered requests.
func (r Report) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(q*float64(len(r.Latencies))))]
}

// Run drives the load until its duration passes or ctx ends.
func Run(ctx context.Context, o Options) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	clients := make([]pb.RateLimitServiceClient, o.Conns)
	for i := range clients {
		cc, err := grpc.NewClient(o.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return Report{}, err
		}
		defer cc.Close()
		clients[i] = pb.NewRateLimitServiceClient(cc)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	h := &health{cancel: cancel}
	var mu sync.Mutex
	var rep Report
	var wg sync.WaitGroup
	cpu, err := startCPU(o.CPU)
	if err != nil {
		return Report{}, err
	}
	start := time.Now()
	for g := 0; g < o.Concurrency; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := client(ctx, clients[g%o.Conns], o, uint64(g), h)
			mu.Lock()
			rep.Latencies = append(rep.Latencies, mine.Latencies...)
			rep.Over += mine.Over
			rep.Errors += mine.Errors
			mu.Unlock()
		}()
	}
	wg.Wait()
	rep.Wall = time.Since(start)
	if rep.CPU, err = cpu.used(); err != nil {
		return rep, err
	}
	rep.Decisions = len(rep.Latencies)
	slices.Sort(rep.Latencies)
	if rep.Decisions == 0 {
		return rep, fmt.Errorf("no request succeeded against %s (%d errors; the last: %v)", o.Target, rep.Errors, h.last())
	}
	return rep, nil
}

// GiveUpAfter is how many failed requests in a row, with none answered yet,
// stop a load early: a target that answers nothing is not measured.
const GiveUpAfter = 100

// health stops a load whose every request fails, and keeps the last error.
type health struct {
	mu       sync.Mutex
	ok, fail int
	lastErr  error
	cancel   func()
}

func (h *health) record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.ok++
		return
	}
	h.fail++
	h.lastErr = err
	if h.ok == 0 && h.fail >= GiveUpAfter {
		h.cancel()
	}
}

func (h *health) last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}

// client is one client's loop: requests one after another until ctx ends.
func client(ctx context.Context, cl pb.RateLimitServiceClient, o Options, seed uint64, h *health) Report {
	rng := rand.New(rand.NewPCG(seed, 1))
	var r Report
	for ctx.Err() == nil {
		req := &pb.RateLimitRequest{Domain: o.Domain, Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: o.Key, Value: fmt.Sprint("v", rng.IntN(o.Keys))}}}}}
		t0 := time.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cl.ShouldRateLimit(rctx, req)
		rcancel()
		if ctx.Err() == nil {
			h.record(err)
		}
		if err != nil {
			if ctx.Err() == nil {
				r.Errors++
			}
			continue
		}
		r.Latencies = append(r.Latencies, time.Since(t0))
		if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			r.Over++
		}
	}
	return r
}
