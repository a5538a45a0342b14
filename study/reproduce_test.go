package study

import (
	"bytes"
	"context"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
)

var reproduceRows = flag.Int("reproduce-rows", 2200, "rows of docs/study-results/results.csv that TestReproducesCommittedResults reruns (0: all)")

// committed is the study's committed results, which the simulator must
// reproduce byte for byte: a refactoring that changes one decision of one
// run changes a row.
const committed = "../docs/study-results/results.csv"

// TestReproducesCommittedResults reruns a subset of the committed
// results.csv, spread over every part and design (the cheapest runs of
// each, so that the test stays quick), and compares the rows it writes
// byte for byte. The race detector slows the simulator tenfold, so under it
// the test is skipped: scripts/test runs it once more without -race.
// -reproduce-rows 0 reruns every row.
func TestReproducesCommittedResults(t *testing.T) {
	if raceEnabled {
		t.Skip("the simulator is ten times slower under -race; scripts/test runs this test without it")
	}
	src, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV(bytes.NewReader(src), committed)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")[1:] // lines[i] is rows[i]
	pick := cheapestPerGroup(rows, *reproduceRows)
	runs := make([]Run, len(pick))
	for j, i := range pick {
		runs[j] = Run{Part: rows[i].Part, Params: rows[i].Params}
	}
	got, complete, err := Execute(context.Background(), runs, Options{})
	if err != nil || !complete {
		t.Fatalf("execute: %v (complete %v)", err, complete)
	}
	groups := map[string]bool{}
	for j, i := range pick {
		var b bytes.Buffer
		if err := WriteCSV(&b, got[j:j+1]); err != nil {
			t.Fatal(err)
		}
		line := strings.SplitAfter(b.String(), "\n")[1]
		if cols := strings.Count(lines[i], ","); strings.Count(line, ",") > cols {
			// a results file of an earlier version: its columns only
			line = strings.Join(strings.SplitN(line, ",", cols+2)[:cols+1], ",") + "\n"
		}
		if line != lines[i] {
			t.Fatalf("row %d differs:\ncommitted %s\nrerun     %s", i+2, lines[i], line)
		}
		groups[rows[i].Part+"/"+rows[i].Params.Design] = true
	}
	all := map[string]bool{}
	for _, r := range rows {
		all[r.Part+"/"+r.Params.Design] = true
	}
	// every grid design in 3 parts and the fleet part, the fixed part, the
	// designs beyond, in counters and in limits, and the peers part's
	// designs
	peers := map[string]bool{}
	for _, pc := range PeerConfigs {
		peers[pc.Design] = true
	}
	want := 4*len(GridDesigns()) + 1 + 3*len(BeyondDesigns()) + len(peers)
	if len(groups) != len(all) || len(all) != want {
		t.Fatalf("the subset covers %d part/design groups of the file's %d, want %d", len(groups), len(all), want)
	}
	t.Logf("%d rows of %s reproduced byte for byte, over %d part/design groups", len(pick), committed, len(groups))
}

// cheapestPerGroup returns the indexes of about n rows (all when n is 0),
// the cheapest of each part and design in equal numbers, in file order.
func cheapestPerGroup(rows []Row, n int) []int {
	byGroup := map[string][]int{}
	var names []string
	for i, r := range rows {
		g := r.Part + "/" + r.Params.Design
		if byGroup[g] == nil {
			names = append(names, g)
		}
		byGroup[g] = append(byGroup[g], i)
	}
	per := len(rows)
	if n > 0 {
		per = (n + len(names) - 1) / len(names)
	}
	var pick []int
	for _, g := range names {
		idx := byGroup[g]
		sort.SliceStable(idx, func(a, b int) bool {
			return ExpectedRequests(rows[idx[a]].Params) < ExpectedRequests(rows[idx[b]].Params)
		})
		pick = append(pick, idx[:min(per, len(idx))]...)
	}
	sort.Ints(pick)
	return pick
}
