package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// rss is a process's resident memory, in bytes (Linux).
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// serveRSSBound is what docs/design.md's bounds table promises of serve's
// resident memory while it refuses requests past the bounds: they hold
// nothing once answered, and the key table is not touched.
const serveRSSBound = 128 << 20

// A serve process on the embedded store refuses 400 requests that each
// carry a 1 MiB descriptor value, and 10,000-descriptor requests over gRPC
// and /json, with the documented errors, creating no key, its RSS under
// the bound throughout (400 such values took it from 25 to 677 MB). A
// 50 MB configuration written in its place is refused before it is read:
// the RSS afterwards is within twice what it was (a 50 MB reload left
// 1.67 GB). It runs without the race detector, whose shadow memory swells
// the child (./scripts/test runs it on its own); rls.TestRequestBounds
// holds the bounds under it.
func TestServeByteBounds(t *testing.T) {
	if raceEnabled {
		t.Skip("RSS under the race detector is no measure of serve's: ./scripts/test runs this without it")
	}
	cfgPath := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfgPath, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, httpAddr, proc := startServeProc(t, cfgPath, "", "serve: ")
	pid := proc.Process.Pid
	call := func(req *pb.RateLimitRequest) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.ShouldRateLimit(ctx, req)
		return err
	}
	if err := call(&pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}); err != nil {
		t.Fatal(err)
	}
	start, most := rss(t, pid), int64(0)
	for i := range 400 {
		v := strings.Repeat(strconv.Itoa(i%10), 1<<20-8) + fmt.Sprintf("%08d", i)
		err := call(&pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: v}}}}})
		if grpcstatus.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "at most 4096") {
			t.Fatalf("a 1 MiB value: %v, want INVALID_ARGUMENT naming the bound", err)
		}
		if i%40 == 0 {
			most = max(most, rss(t, pid))
		}
	}
	many := &pb.RateLimitRequest{Domain: "d"}
	for i := range 10_000 {
		many.Descriptors = append(many.Descriptors, &rlv3.RateLimitDescriptor{
			Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: strconv.Itoa(i)}}})
	}
	if err := call(many); grpcstatus.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "at most 64") {
		t.Fatalf("10,000 descriptors over gRPC: %v, want INVALID_ARGUMENT naming the bound", err)
	}
	body, _ := protojson.Marshal(many)
	resp, err := http.Post("http://"+httpAddr+"/json", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("10,000 descriptors on /json: %d, want 400", resp.StatusCode)
	}
	most = max(most, rss(t, pid))
	if n := metricSum(t, []string{httpAddr}, "fleetlimit_keys"); n != 1 {
		t.Fatalf("%v keys held after the refused requests, want the one admitted", n)
	}
	t.Logf("RSS %d MB at the start, at most %d MB while refusing (bound %d MB)", start>>20, most>>20, serveRSSBound>>20)
	if most > serveRSSBound {
		t.Fatalf("RSS reached %d MB, over the bound of %d MB", most>>20, serveRSSBound>>20)
	}

	// A 50 MB configuration, refused before it is read.
	before := rss(t, pid)
	big := bytes.Repeat([]byte("# padding to fifty megabytes\n"), 50<<20/29)
	tmp := cfgPath + ".tmp"
	if err := os.WriteFile(tmp, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfgPath); err != nil {
		t.Fatal(err)
	}
	logs := proc.Stderr.(*testWriter)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.text(), "MaxConfigBytes") {
		if time.Now().After(deadline) {
			t.Fatal("the 50 MB configuration was not refused")
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := rss(t, pid)
	t.Logf("RSS %d MB before the 50 MB reload, %d MB after it was refused", before>>20, after>>20)
	if after > 2*before {
		t.Fatalf("RSS %d MB after the refused reload, more than twice the %d MB before", after>>20, before>>20)
	}

	// A 7 MB configuration within the bound that is read, parsed, and
	// refused at its last line: what the parse took is given back.
	var cfg bytes.Buffer
	cfg.WriteString("domain: d\ndescriptors:\n")
	for i := 0; cfg.Len() < 7<<20; i++ {
		fmt.Fprintf(&cfg, "  - key: k%d\n    rate_limit: {unit: minute, requests_per_unit: 5}\n", i)
	}
	cfg.WriteString("  - key: last\n    rate_limit: {unit: fortnight, requests_per_unit: 5}\n")
	if err := os.WriteFile(tmp, cfg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfgPath); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(logs.text(), "fortnight") {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatal("the 7 MB configuration was not refused")
		}
		time.Sleep(50 * time.Millisecond)
	}
	parsed := rss(t, pid)
	for i := 0; i < 20 && parsed > 2*before; i++ { // the memory goes back as the refusal is said; give it a moment
		time.Sleep(50 * time.Millisecond)
		parsed = rss(t, pid)
	}
	t.Logf("RSS %d MB after a 7 MB configuration was parsed and refused", parsed>>20)
	if parsed > 2*before {
		t.Fatalf("RSS %d MB after a refused 7 MB reload, more than twice the %d MB before", parsed>>20, before>>20)
	}
}
