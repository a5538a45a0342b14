package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

const membershipConfig = `domain: e2e
descriptors:
  - key: client
    rate_limit:
      unit: hour
      requests_per_unit: %d
fleetlimit:
  design: lease
  sync: 100ms
  membership: true
  claim_ttl: 600ms
`

// Three serve processes with membership on one real redis-server: each
// reports K = 3; a fourth joins mid-run and all four report K = 4; one of
// the first three is killed (SIGKILL: it never leaves) and the survivors
// report K = 3 once its membership lapses. lease's bound is the limit
// itself: across both changes the fleet admits at most L; and the dead
// process held slots (lease asks for ceil(1.5 r + 1) at every sync, never
// nothing), which come back through the survivors' syncs, so that the
// fleet admits all of L.
func TestServeMembership(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	// The limit is an hour's, in fixed windows: a run across the hour would
	// count afresh in the new one (a quiet run takes 10 s, a busy one
	// about 30; at 11:59:51 one admitted 75 of L = 60).
	avoidEdge(time.Hour, time.Minute)
	srv := redistest.Start(t)
	const limit = 60
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(membershipConfig, limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		client pb.RateLimitServiceClient
		http   string
		pid    int
	}
	var ps []proc
	start := func(i int) {
		c, h, cmd := startServeProc(t, cfgPath, srv.Addr, fmt.Sprintf("serve %d: ", i))
		ps = append(ps, proc{c, h, cmd.Process.Pid})
	}
	// reportK waits (boundedly) until every process in live reports K = k,
	// and returns their indexes.
	reportK := func(k int, live ...int) []float64 {
		t.Helper()
		var idx []float64
		for range 100 {
			idx = idx[:0]
			all := true
			for _, i := range live {
				v, ok := metric(t, ps[i].http, "fleetlimit_gateways")
				all = all && ok && v == float64(k)
				x, _ := metric(t, ps[i].http, "fleetlimit_gateway_index")
				idx = append(idx, x)
			}
			if all {
				return idx
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("not every process of %v reports K = %d", live, k)
		return nil
	}
	req := &pb.RateLimitRequest{Domain: "e2e", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "client", Value: "alice"}}}}}
	total := 0
	drive := func(n int, to ...int) {
		t.Helper()
		for j := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := ps[to[j%len(to)]].client.ShouldRateLimit(ctx, req)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if r.OverallCode == pb.RateLimitResponse_OK {
				total++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	for i := range 3 {
		start(i)
	}
	t.Logf("three members, indexes %v", reportK(3, 0, 1, 2))
	drive(30, 0, 1, 2)
	start(3)
	t.Logf("a fourth joined, indexes %v", reportK(4, 0, 1, 2, 3))
	drive(10, 0, 2, 3)
	// Two syncs after process 1's last requests what it admitted is in
	// the store, and what it holds is lease slots it will never use.
	drive(10, 1)
	time.Sleep(250 * time.Millisecond)
	if err := syscall.Kill(ps[1].pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("process 1 killed; survivors' indexes %v", reportK(3, 0, 2, 3))
	if total > limit {
		t.Fatalf("%d admitted before the limit was reached, over L = %d", total, limit)
	}
	drive(3*limit, 0, 2, 3)
	t.Logf("%d admitted in all, L = %d", total, limit)
	if total != limit {
		t.Fatalf("the fleet admitted %d with a limit of %d: want exactly L (lease is exact, and the dead member's slots come back)", total, limit)
	}
}
