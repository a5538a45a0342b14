package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// logged is one request of a generated log: when it came, when its line
// was written, its client, and the host that served it.
type logged struct {
	start, end time.Time
	ip         string
	host       int
}

// realShapedLog is 40 minutes of 30 clients (some well over 10 a minute)
// on two hosts, each line written as its request ended (Apache's %t is
// the start): most requests take a fraction of a second, one in fifty up
// to five minutes; the two hosts' lines are merged as a collector merges
// them, by when they were written. It returns the requests in the order
// of the file.
func realShapedLog(seed uint64) []logged {
	rng := rand.New(rand.NewPCG(seed, 42))
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var out []logged
	for c := range 30 {
		rate := []float64{0.02, 0.1, 0.3, 1}[c%4] // per second, against 10 a minute
		for t := rng.ExpFloat64() / rate; t < 2400; t += rng.ExpFloat64() / rate {
			start := t0.Add(time.Duration(t * float64(time.Second))).Truncate(time.Second) // %t has whole seconds
			took := time.Duration(rng.ExpFloat64() * 0.2 * float64(time.Second))
			if rng.IntN(50) == 0 {
				took = time.Duration(rng.Float64() * float64(5*time.Minute))
			}
			out = append(out, logged{start, start.Add(took), fmt.Sprintf("198.51.100.%d", c+1), rng.IntN(2)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].end.Before(out[j].end) })
	return out
}

// exactByStart is the exact sliding-window limit, counted here apart from
// fleetlimit: requests in the order they came (ties in the file's order),
// each admitted when fewer than limit admits of its client lie in the
// window before it.
func exactByStart(reqs []logged, limit int, w time.Duration) int {
	byStart := slices.Clone(reqs)
	sort.SliceStable(byStart, func(i, j int) bool { return byStart[i].start.Before(byStart[j].start) })
	admits := map[string][]time.Time{}
	n := 0
	for _, r := range byStart {
		in := 0
		for _, a := range admits[r.ip] {
			if a.After(r.start.Add(-w)) {
				in++
			}
		}
		if in < limit {
			admits[r.ip] = append(admits[r.ip], r.start)
			n++
		}
	}
	return n
}

// A log as servers write it, out of order by up to five minutes and two
// hosts merged, replayed with the defaults (no --format, no --horizon):
// every line is replayed, and the exact limit's admits equal the count
// made here.
func TestReplayRealShapedLog(t *testing.T) {
	reqs := realShapedLog(5)
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s - - [%s] \"GET /api/items HTTP/1.1\" 200 512 \"-\" \"client/%d\"\n", r.ip, r.start.Format("02/Jan/2006:15:04:05 -0700"), r.host)
	}
	path := filepath.Join(t.TempDir(), "merged.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", path, "--key", "ip", "--limit", "10", "--window", "1m", "--gateways", "8", "--designs", "permit,shared-counter", "--json")
	var doc struct {
		Format          string
		FormatDetected  bool
		LeftOut         int64
		Requests        int64
		Late            int64
		Bad             int
		Reordered       int64
		DisorderSeconds float64
		Designs         []struct {
			Design   string `json:"design"`
			Admitted int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if doc.Format != "combined" || !doc.FormatDetected || doc.LeftOut != 0 || doc.Late != 0 || doc.Bad != 0 || doc.Requests != int64(len(reqs)) {
		t.Fatalf("%d lines: format %s (detected %v), %d requests replayed, %d left out (%d late, %d bad)",
			len(reqs), doc.Format, doc.FormatDetected, doc.Requests, doc.LeftOut, doc.Late, doc.Bad)
	}
	if doc.Reordered == 0 || doc.DisorderSeconds < 60 || doc.DisorderSeconds > 300 {
		t.Errorf("%d lines reordered, by up to %.0f s: want some, by minutes", doc.Reordered, doc.DisorderSeconds)
	}
	want := exactByStart(reqs, 10, time.Minute)
	if doc.Designs[0].Design != "central-log" || doc.Designs[0].Admitted != int64(want) {
		t.Errorf("central-log admitted %d, the count here %d", doc.Designs[0].Admitted, want)
	}
	t.Logf("%d lines, %d reordered by up to %.0f s; %d admitted by the exact limit", len(reqs), doc.Reordered, doc.DisorderSeconds, want)
}

// A CSV log on stdin, one line in twenty ten minutes behind its place,
// replayed within a horizon of a minute: those lines are left out, the
// report opens with their count, and past --max-left-out the exit status
// is 1, naming the fix.
func TestReplayStdinLeftOutPastHorizon(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var b strings.Builder
	const n = 4000
	late := 0
	for i := range n {
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		if i >= 240 && i%20 == 10 {
			at = at.Add(-10 * time.Minute)
			late++
		}
		fmt.Fprintf(&b, "%s,key-%d\n", at.Format(time.RFC3339Nano), i%7)
	}
	path := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	replayStdin := func(args ...string) (int, string, string) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		old := os.Stdin
		os.Stdin = f
		defer func() { os.Stdin = old }()
		return runCLI(append([]string{"replay", "-", "--horizon", "1m", "--designs", "headroom"}, args...)...)
	}
	code, stdout, stderr := replayStdin()
	share := 100 * float64(late) / n
	head := fmt.Sprintf("LEFT OUT: %d of %d lines (%.2f%%) are not in these figures: %d further back than --horizon 1m0s", late, n, share, late)
	if code != 1 || !strings.HasPrefix(stdout, head) || !strings.Contains(stderr, "more than --max-left-out 1%") {
		t.Fatalf("exit %d (want 1); stdout should open with %q:\n%s\nstderr: %s", code, head, stdout, stderr)
	}
	if code, stdout, stderr := replayStdin("--max-left-out", "10"); code != 0 || !strings.HasPrefix(stdout, head) {
		t.Fatalf("with --max-left-out 10: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := replayStdin("--horizon", "0"); code != 0 || strings.Contains(stdout, "LEFT OUT") {
		t.Fatalf("ordered whole: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
