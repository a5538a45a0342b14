package study

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestGridRunCount(t *testing.T) {
	runs := Grid()
	parts := map[string]int{}
	for _, r := range runs {
		parts[r.Part]++
		if err := r.Params.Validate(); err != nil {
			t.Fatalf("%v: %v", r.Params, err)
		}
	}
	// designs x K x Δ x traffic x routing x seeds, as the study lays out:
	// the study's seven and fleetlimit's own, and one more design beyond
	// the grid in the parts past the study.
	n := len(GridDesigns())
	if n != len(catalog.StudyDesigns)+len(catalog.OwnDesigns) {
		t.Fatalf("%d grid designs", n)
	}
	want := map[string]int{
		PartHonest: n * 5 * 5 * 5 * 2 * 5,
		PartFlood:  n * 5 * 5 * 7 * 3,
		PartFixed:  1 * 5 * 5 * 7 * 3,
		PartBusy:   n * 3 * 3 * 2 * 2 * 3,
		// designs x (flood and honest baselines, 8 targeted floods, 2
		// pulsed, 2 sudden, 3 round trips and 2 losses under a flood and
		// honest traffic, restarts under both) x seeds
		PartBeyond: (n + 1) * (2 + 8 + 2 + 2 + 6 + 4 + 2 + 2) * 3,
		// designs x (window kinds x (honest x seeds + floods x seeds) +
		// busy window kinds x seeds)
		PartCounters: (n + 1) * (4*(2*5+2*3) + 2*2),
		// designs x (floods + honest traffics) x seeds
		PartLimits: (n + 1) * (4 + 2) * 3,
		// configurations x (floods + honest traffics) x seeds
		PartPeers: 17 * (4 + 2) * 3,
		// designs x K x (honest under two routings + floods) x seeds
		PartFleet: n * 2 * (2 + 8) * 3,
	}
	total := 0
	for p, w := range want {
		total += w
		if parts[p] != w {
			t.Errorf("%s: %d runs, want %d", p, parts[p], w)
		}
	}
	if len(runs) != total || len(parts) != len(want) {
		t.Errorf("grid has %d runs in %d parts, want %d in %d", len(runs), len(parts), total, len(want))
	}
	seen := map[string]bool{}
	for _, r := range runs {
		key := r.Part + " " + r.Params.String()
		if seen[key] {
			t.Fatalf("run twice: %s", key)
		}
		seen[key] = true
	}
}

func TestFilter(t *testing.T) {
	f, err := ParseFilter("design=lease,split k=8; sync=1s traffic=flood part=flood")
	if err != nil {
		t.Fatal(err)
	}
	runs := f.Select(Grid())
	if len(runs) != 2*7*3 {
		t.Fatalf("%d runs, want 42", len(runs))
	}
	for _, r := range runs {
		p := r.Params
		if (p.Design != "lease" && p.Design != "split") || p.Gateways != 8 || p.Sync.Seconds() != 1 || r.Part != PartFlood {
			t.Fatalf("selected %s %v", r.Part, p)
		}
	}
	for _, bad := range []string{"k", "colour=red", "design=magic", "sync=soon"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted it", bad)
		}
	}
}

// The results do not depend on the number of workers: same results.csv bytes.
func TestSameResultsAnyWorkers(t *testing.T) {
	f, _ := ParseFilter("k=2,32 sync=100ms,10s")
	runs := f.Select(Quick())
	if len(runs) < 50 {
		t.Fatalf("only %d runs", len(runs))
	}
	// ten minutes each, and not permit's dearest (32 gateways syncing every
	// 100 ms): the order of the work, not its length, is under test
	runs = slices.DeleteFunc(runs, func(r Run) bool {
		return r.Params.Design == "permit" && r.Params.Gateways == 32 && r.Params.Sync == 100*time.Millisecond
	})
	for i := range runs {
		runs[i].Params.Duration = min(runs[i].Params.Duration, 10*time.Minute)
	}
	var want []byte
	for _, w := range []int{1, 2, 5} {
		rows, complete, err := Execute(context.Background(), runs, Options{Workers: w})
		if err != nil || !complete {
			t.Fatalf("workers %d: %v, complete %v", w, err, complete)
		}
		var b bytes.Buffer
		if err := WriteCSV(&b, rows); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = b.Bytes()
			continue
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("%d workers wrote other results.csv bytes than 1 worker", w)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	src, err := os.ReadFile("testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV(bytes.NewReader(src), "testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), src) {
		t.Fatal("reading and writing results.csv changed it")
	}
	for _, bad := range []string{"part,design\nx,y\n", strings.Replace(string(src), "shared-counter", "magic", 1)} {
		if _, err := ReadCSV(strings.NewReader(bad), "bad.csv"); err == nil {
			t.Errorf("ReadCSV accepted a bad file")
		}
	}
}

// The report built from a fixed results file matches the golden report.
func TestReportGolden(t *testing.T) {
	f, err := os.Open("testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadCSV(f, "testdata/results.csv")
	if err != nil {
		t.Fatal(err)
	}
	rep := Build(rows)
	js, _ := json.MarshalIndent(rep.Summary, "", "  ")
	for name, got := range map[string][]byte{"report.md.golden": []byte(rep.Markdown), "summary.json.golden": append(js, '\n')} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./study -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the report built now; if the change is intended, run go test ./study -update and review the diff", path)
		}
	}
}

// Rebuild writes the report and plots from results.csv alone.
func TestRebuild(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile("testdata/results.csv")
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no rows")
	}
	for _, f := range []string{"report.md", "summary.json", "flood_law.png", "floods_k8.png", "honest_k.png", "honest_sync.png", "fixed_vs_sliding.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Rebuild(t.TempDir()); err == nil {
		t.Error("Rebuild of an empty directory succeeded")
	}
}

func TestFilterNamesMalformedValues(t *testing.T) {
	for _, c := range []struct{ in, say string }{
		{"k=abc", "filter k=abc: want a whole number"},
		{"traffic=floood:3", "filter traffic=floood:3"},
		{"part=honesty", "filter part=honesty"},
		{"routing=random", `routing "random"`},
		{"kind=tumbling", `window kind "tumbling"`},
	} {
		if _, err := ParseFilter(c.in); err == nil || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%s: %v, want an error saying %q", c.in, err, c.say)
		}
	}
	if _, err := ParseFilter("traffic=flood part=busy k=8 routing=uneven kind=fixed seed=2"); err != nil {
		t.Fatal(err)
	}
}
