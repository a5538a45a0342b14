package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// upstreamBinary is envoyproxy/ratelimit's service command, which
// scripts/test installs with go install at the version it pins, and names
// in FLEETLIMIT_UPSTREAM_RATELIMIT. Without it these tests skip, unless
// FLEETLIMIT_REQUIRE_UPSTREAM is set, as scripts/test sets it.
func upstreamBinary(t *testing.T) string {
	bin := os.Getenv("FLEETLIMIT_UPSTREAM_RATELIMIT")
	if bin == "" {
		if os.Getenv("FLEETLIMIT_REQUIRE_UPSTREAM") != "" {
			t.Fatal("FLEETLIMIT_UPSTREAM_RATELIMIT must name envoyproxy/ratelimit's service_cmd")
		}
		t.Skip("FLEETLIMIT_UPSTREAM_RATELIMIT unset; scripts/test installs envoyproxy/ratelimit and sets it")
	}
	return bin
}

// startUpstream starts envoyproxy/ratelimit itself on testdata/upstream's
// runtime directory, on Redis at redisAddr. The pinned version predates
// descriptor metadata and the scripts' example, so that file is left out.
func startUpstream(t *testing.T, redisAddr string, env ...string) *upstreamServe {
	t.Helper()
	dh, dp, _ := net.SplitHostPort(freeAddr(t))
	env = append([]string{"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr, "DEBUG_HOST=" + dh, "DEBUG_PORT=" + dp}, env...)
	return startService(t, exec.Command(upstreamBinary(t)), env, []string{"example.yaml"})
}

// The replayed test cases, run on envoyproxy/ratelimit itself: what the
// replay expects of fleetlimit is what upstream answers.
func TestAgainstUpstreamReplay(t *testing.T) {
	s := startUpstream(t, redistest.Start(t).Addr)
	replayBasic(t, s, false)
	replayShareThreshold(t, s)
	replayReload(t, s)
	stop := startUpstream(t, redistest.Start(t).Addr, "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true")
	replayBasic(t, stop, true)
}

// The migration sequence on envoyproxy/ratelimit and on fleetlimit's
// central-counter, on one Redis, and on central-log: central-counter's
// answers are upstream's at every step, field by field; central-log's
// differ only where docs/serve.md says. Then a mixed fleet, requests
// alternating between upstream and fleetlimit on one key, admits the limit
// once, not once per kind of replica.
func TestAgainstUpstreamMigration(t *testing.T) {
	srv := redistest.Start(t)
	real := startUpstream(t, srv.Addr, "CACHE_KEY_PREFIX=mig_")
	counter := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-counter", "CACHE_KEY_PREFIX=other_")
	own := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-log")
	for attempt := 0; ; attempt++ {
		err := runMigration(t, real, own, migrationSteps, migrationRequest)
		if err == nil {
			err = runMigration(t, counter, own, migrationSteps, migrationRequest)
		}
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatal(err)
		}
		t.Logf("retrying: %v", err)
	}

	mixed := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-counter", "CACHE_KEY_PREFIX=mix_")
	realMix := startUpstream(t, srv.Addr, "CACHE_KEY_PREFIX=mix_")
	req := &pb.RateLimitRequest{Domain: "another", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{{
		Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "key3", Value: "mixed"}}}}} // 10 an hour
	hour := time.Now().Truncate(time.Hour)
	admitted := 0
	for i := 0; i < 30; i++ {
		s := mixed
		if i%2 == 1 {
			s = realMix
		}
		if s.call(t, req).OverallCode == pb.RateLimitResponse_OK {
			admitted++
		}
	}
	if !time.Now().Truncate(time.Hour).Equal(hour) {
		t.Skip("the requests straddled an hour, whose window starts the count afresh; nothing to compare")
	}
	if admitted != 10 {
		t.Fatalf("a mixed fleet of upstream and central-counter admitted %d of 30 on a limit of 10 an hour, want 10", admitted)
	}
}

// checkSequence sends, for key2 (20 a minute) of domain "another", a
// request of 20 hits, a check (hits_addend 0) with the limit reached, one
// hit more and a check past it, and returns each answer's code.
func checkSequence(t *testing.T, s *upstreamServe, value string) []pb.RateLimitResponse_Code {
	avoidMinuteEdge()
	var codes []pb.RateLimitResponse_Code
	for _, hits := range []uint64{20, 0, 1, 0} {
		d := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "key2", Value: value}}, HitsAddend: wrapperspb.UInt64(hits)}
		codes = append(codes, s.call(t, &pb.RateLimitRequest{Domain: "another", Descriptors: []*rlv3.RateLimitDescriptor{d}}).Statuses[0].Code)
	}
	return codes
}

// A check (hits_addend 0) with the limit reached, on envoyproxy/ratelimit
// itself and on fleetlimit: upstream answers OK (over means the count past
// the limit, src/limiter/base_limiter.go), and so does central-counter,
// its algorithm; fleetlimit's other designs never count past the limit,
// and answer OVER_LIMIT once it is reached (docs/serve.md, "Checks"). One
// hit more is over everywhere, and so is the check after it upstream and
// on central-counter, which counted the refused hit.
func TestAgainstUpstreamCheckOnlyAtTheLimit(t *testing.T) {
	srv := redistest.Start(t)
	want := fmt.Sprint(checkSequence(t, startUpstream(t, srv.Addr, "CACHE_KEY_PREFIX=up_"), "a"))
	if want != "[OK OK OVER_LIMIT OVER_LIMIT]" {
		t.Fatalf("upstream answered %s: the pinned version's rule changed", want)
	}
	counter := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-counter", "CACHE_KEY_PREFIX=cc_")
	if got := fmt.Sprint(checkSequence(t, counter, "a")); got != want {
		t.Errorf("central-counter answered %s, upstream %s", got, want)
	}
	own := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_DESIGN=central-log")
	if got := fmt.Sprint(checkSequence(t, own, "a")); got != "[OK OVER_LIMIT OVER_LIMIT OVER_LIMIT]" {
		t.Errorf("central-log answered %s, want the check at the limit over", got)
	}
}
