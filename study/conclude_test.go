package study

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The committed study's report opens with what it found, in figures taken
// from its own table, and the decision table; each cell of the table names
// a design that meets the table's rules on that K and Δ.
func TestReportConcludesFromItsFigures(t *testing.T) {
	rows := readRows(t, "../docs/study-results/results.csv")
	rep := Build(rows)
	md := rep.Markdown
	if !strings.HasPrefix(md[strings.Index(md, "\n## "):], "\n## What this run found") {
		t.Fatalf("the report's first section is not its findings:\n%s", md[:400])
	}
	tb := aggregate(rows)
	worst := tb[refFlood("shared-counter", refK, refSync, Floods[len(Floods)-1])].WorstWindowX
	if want := fmt.Sprintf("The worst is shared-counter at %.2f × L", worst); !strings.Contains(md, want) {
		t.Errorf("the flood finding lacks %q", want)
	}
	if strings.Contains(md, "This is a reduced grid") {
		t.Error("the full grid's report says it is reduced")
	}
	s := section{t: tb, rows: rows, designs: presentDesigns(rows), rates: presentFloods(rows)}
	for _, k := range Gateways {
		for _, sync := range Syncs {
			cell := s.choose(k, sync, true)
			d, _, _ := strings.Cut(cell, " ")
			if d == "none" {
				continue
			}
			w, _ := tb.worstOver(append(s.honestCells(d, k, sync), s.headroomFloods(d, k, sync)...), func(m Mean) float64 { return m.WorstWindowX })
			ex, _ := s.honestExcess(d, k, sync)
			if w > decideWorstX || ex > decideExcessPP {
				t.Errorf("K=%d Δ=%v: %s chosen with worst window %.3f and rejections +%.2f", k, sync, d, w, ex)
			}
			if !strings.Contains(md, cell) {
				t.Errorf("K=%d Δ=%v: %q is not in the report", k, sync, cell)
			}
		}
	}
}

// A reduced grid's report says so at the top and under every table, draws
// no verdict and has no decision table.
func TestReducedReportSaysSo(t *testing.T) {
	rows := readRows(t, "testdata/results.csv") // 176 runs: two K, two Δ, one seed
	// a design run in one honest scenario only: every other table must
	// leave it out, not show a row of dashes
	for _, r := range rows {
		if r.Part == PartHonest {
			r.Params.Design = "caddy-distributed"
			rows = append(rows, r)
			break
		}
	}
	md := Build(rows).Markdown
	if !strings.Contains(md, "**This is a reduced grid**") || strings.Contains(md, "### Which design") {
		t.Fatalf("a reduced report without its warning, or with a decision table:\n%s", md[:600])
	}
	tables := strings.Count(md, "\n|---")
	if notes := strings.Count(md, reducedNote); notes != tables {
		t.Errorf("%d tables, %d reduced-grid notes", tables, notes)
	}
	body := md[strings.Index(md, "- **Floods"):]
	if strings.ContainsAny(body, "✓✗") {
		t.Error("a verdict drawn from a reduced grid")
	}
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) > 2 && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---") &&
			strings.Trim(strings.Join(cells[1:], ""), " –") == "" {
			t.Errorf("a row of scenarios not run: %s", line)
		}
	}
}

// readRows reads a results.csv.
func readRows(t *testing.T, name string) []Row {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadCSV(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
