package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// migrationStep is one request of the side-by-side sequence: its hits, and
// the answer of each algorithm (code, limit_remaining).
type migrationStep struct {
	hits          uint64
	upstream, own [2]uint32 // {1 if over, remaining}
	newWindow     bool      // wait for the next second first
	differs       string    // why the two answers differ, when they do
}

// The same requests, on one real redis-server, to upstream's algorithm in
// migration mode (central-counter) and to fleetlimit's own (central-log),
// on a limit of 5 a second: hits of 1, 0 and 99, under and over the limit,
// across a window boundary. Code, limit_remaining and duration_until_reset
// are compared field by field; where they differ, the difference is the
// documented one. central-counter's count must also be upstream's Redis key,
// which an upstream replica (an INCRBY of the key, as upstream's pipeline
// sends) shares.
func TestMigrationSideBySide(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	srv := redistest.Start(t)
	up := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-counter", "CACHE_KEY_PREFIX=mig_")
	own := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-log")
	for attempt := 0; ; attempt++ {
		err := runMigration(t, up, own, migrationSteps, migrationRequest)
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatal(err)
		}
		t.Logf("retrying: %v", err) // a step crossed a second: the machine was too slow
	}

	// The count is upstream's key, and an upstream replica's INCRBY of it
	// counts for fleetlimit too.
	rdb := srv.Client()
	defer rdb.Close()
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		waitSecondStart()
		sec := time.Now().Unix()
		up.call(t, migrationRequest(2))
		key := "mig_another_mig_v_" + strconv.FormatInt(sec, 10)
		n, err := rdb.Get(ctx, key).Int()
		if err == nil {
			err = rdb.IncrBy(ctx, key, 2).Err()
		}
		resp := up.call(t, migrationRequest(1))
		if time.Now().Unix() != sec && attempt < 2 {
			continue // crossed a second: try again
		}
		if n != 2 || err != nil || resp.Statuses[0].LimitRemaining != 0 || resp.Statuses[0].Code != pb.RateLimitResponse_OK {
			t.Fatalf("Redis key %s held %d (%v), want 2, the key upstream's algorithm writes; after an upstream replica's 2 hits: %v, want OK with 0 remaining (5 - 2 - 2 - 1)",
				key, n, err, resp)
		}
		break
	}
}

// o and x are a step's codes: OK and OVER_LIMIT.
const o, x = 0, 1

// migrationSteps are the side-by-side sequence, on a limit of 5 a second.
var migrationSteps = []migrationStep{
	{hits: 1, upstream: [2]uint32{o, 4}, own: [2]uint32{o, 4}, newWindow: true},
	{hits: 0, upstream: [2]uint32{o, 4}, own: [2]uint32{o, 4}},
	{hits: 4, upstream: [2]uint32{o, 0}, own: [2]uint32{o, 0}},
	{hits: 0, upstream: [2]uint32{o, 0}, own: [2]uint32{x, 0},
		differs: "a check at the limit: upstream passes it while the count equals the limit; fleetlimit refuses it once nothing is left"},
	{hits: 1, upstream: [2]uint32{x, 0}, own: [2]uint32{x, 0}},
	{hits: 0, upstream: [2]uint32{x, 0}, own: [2]uint32{x, 0}},
	{hits: 3, upstream: [2]uint32{o, 2}, own: [2]uint32{o, 2}, newWindow: true},
	{hits: 99, upstream: [2]uint32{x, 0}, own: [2]uint32{x, 0}},
	{hits: 1, upstream: [2]uint32{x, 0}, own: [2]uint32{o, 1},
		differs: "after a rejected request of 99: upstream counted its hits, fleetlimit did not"},
	{hits: 0, upstream: [2]uint32{x, 0}, own: [2]uint32{o, 1},
		differs: "a check after the rejected 99: upstream's count is past the limit"},
}

// migrationRequest is the sequence's request: hits on {mig: v} under a
// limit override of 5 a second.
func migrationRequest(hits uint64) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "another", Descriptors: []*rlv3.RateLimitDescriptor{{
		Entries:    []*rlv3.RateLimitDescriptor_Entry{{Key: "mig", Value: "v"}},
		Limit:      &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: 1}, // SECOND
		HitsAddend: wrapperspb.UInt64(hits)}}}
}

// runMigration sends steps to both services; an error means a window
// boundary fell inside a phase, so the run says nothing.
func runMigration(t *testing.T, up, own *upstreamServe, steps []migrationStep, desc func(uint64) *pb.RateLimitRequest) error {
	t.Helper()
	var phase int64
	for i, st := range steps {
		if st.newWindow {
			waitSecondStart()
			phase = time.Now().Unix()
		}
		ru, ro := up.call(t, desc(st.hits)), own.call(t, desc(st.hits))
		if time.Now().Unix() != phase {
			return fmt.Errorf("step %d ran past its second", i+1)
		}
		su, so := ru.Statuses[0], ro.Statuses[0]
		for _, c := range []struct {
			name string
			s    *pb.RateLimitResponse_DescriptorStatus
			want [2]uint32
		}{{"upstream", su, st.upstream}, {"fleetlimit", so, st.own}} {
			overGot := c.s.Code == pb.RateLimitResponse_OVER_LIMIT
			if overGot != (c.want[0] == 1) || c.s.LimitRemaining != c.want[1] || c.s.GetDurationUntilReset().AsDuration() != time.Second {
				t.Fatalf("step %d (hits %d), %s: %v; want over %v, remaining %d, reset 1s", i+1, st.hits, c.name, c.s, c.want[0] == 1, c.want[1])
			}
		}
		if same := su.Code == so.Code && su.LimitRemaining == so.LimitRemaining; same != (st.differs == "") {
			t.Fatalf("step %d: answers the same: %v; documented difference: %q", i+1, same, st.differs)
		}
	}
	return nil
}

// waitSecondStart sleeps until just after the next second begins.
func waitSecondStart() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 5*time.Millisecond).Sub(now))
}
