package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shopLog writes a combined log: a quiet client, and one that sends 3 a
// second for two minutes, with a bad line, and returns its path.
func shopLog(t *testing.T) string {
	var b strings.Builder
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for s := range 120 {
		ts := start.Add(time.Duration(s) * time.Second).Format("02/Jan/2006:15:04:05 -0700")
		for range 3 {
			fmt.Fprintf(&b, `192.0.2.66 - - [%s] "GET /products HTTP/1.1" 200 10 "-" "bot"`+"\n", ts)
		}
		if s%20 == 0 {
			fmt.Fprintf(&b, `10.0.0.1 - - [%s] "GET / HTTP/1.1" 200 10 "-" "firefox"`+"\n", ts)
		}
		if s == 50 {
			b.WriteString("this is not a log line\n")
		}
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayCLI(t *testing.T) {
	path := shopLog(t)
	out := filepath.Join(t.TempDir(), "keys.csv")
	code, stdout, stderr := runCLI("replay", path, "--format", "combined", "--limit", "60", "--window", "1m",
		"--designs", "shared-counter,headroom", "--gateways", "4", "--csv", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "LEFT OUT: 1 of 367 lines (0.27%)") {
		t.Errorf("the report does not open with the line left out:\n%s", stdout)
	}
	for _, want := range []string{"366 requests of 2 keys", "central-log", "shared-counter", "headroom",
		"1 line could not be read and was left out, the first: line 157 (not a combined log line (too few fields))", "keys most affected: 192.0.2.66"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 1+2*3 || rows[0][0] != "key" {
		t.Fatalf("the per-key CSV: %v rows, %v", len(rows), err)
	}

	code, stdout, stderr = runCLI("replay", path, "--format", "combined", "--limit", "60", "--designs", "headroom", "--json")
	var doc struct {
		Requests int64
		Bad      int
		Designs  []struct {
			Design   string `json:"design"`
			Admitted int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || doc.Requests != 366 || doc.Bad != 1 || len(doc.Designs) != 2 || doc.Designs[0].Design != "central-log" {
		t.Fatalf("--json: exit %d, %s %s", code, stdout, stderr)
	}
	// the exact limit: 60 a minute of the bot's 180, all 6 of the quiet client's
	if doc.Designs[0].Admitted != 2*60+6 {
		t.Errorf("central-log admitted %d, want 126", doc.Designs[0].Admitted)
	}
}

func TestReplayBadInput(t *testing.T) {
	path := shopLog(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", path, "--max-left-out", "101"}, "want a percentage"},
		{[]string{"replay", path, "--horizon", "-1s"}, "--horizon"},
		{[]string{"replay", path, "--format", "apache"}, "want csv, common, combined, json, envoy, alb, cloudfront or caddy"},
		{[]string{"replay", path, "--format", "combined", "--key", "field:x"}, "a combined log has no field"},
		{[]string{"replay", path, "--format", "combined", "--routing", "log"}, "give --gateway-field"},
		{[]string{"replay", path, "--format", "combined", "--designs", "magic"}, "unknown design"},
		{[]string{"replay", path, "--format", "combined", "--speed", "-2"}, "speed"},
		{[]string{"replay", path, "--format", "combined", "--max-bad", "1"}, "line 157"},
		{[]string{"replay", path, "--format", "combined", "--config", "x.yaml"}, "go together"},
		{[]string{"replay", filepath.Join(t.TempDir(), "none.log"), "--format", "csv"}, "no such file"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want an error saying %q", c.args[1:], code, stderr, c.want)
		}
	}
}

func TestAdviseOnALog(t *testing.T) {
	path := shopLog(t)
	code, stdout, stderr := runCLI("advise", "--log", path, "--format", "combined", "--gateways", "2,4", "--sync", "1s,3s",
		"--limit", "60", "--max-over", "1.05", "--json")
	var cands []struct {
		Design       string  `json:"design"`
		Sync         string  `json:"sync"`
		Fits         bool    `json:"fits"`
		WorstWindowX float64 `json:"worst_window_x"`
		RejectedPct  float64 `json:"rejected_pct"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &cands) != nil {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	seen := map[string]bool{}
	for i, c := range cands {
		seen[c.Design+"@"+c.Sync] = true
		if c.Design == "central-log" && (c.WorstWindowX != 1 || c.RejectedPct != 0 || c.Sync != "") {
			t.Errorf("the exact limit against itself: %+v", c)
		}
		if i > 0 && c.Fits && !cands[i-1].Fits {
			t.Errorf("a candidate within budget ranked after one outside: %+v after %+v", c, cands[i-1])
		}
	}
	if !seen["central-log@"] || !seen["headroom@1s"] || !seen["headroom@3s"] || seen["central-log@1s"] {
		t.Errorf("candidates %v: want every design at each Δ, central-log once", seen)
	}
	for _, bad := range [][]string{
		{"advise", "--log", path, "--format", "combined", "--honest", "steady:1"},
		{"advise", "--format", "combined"},
		{"advise", "--log", path, "--format", "apache"},
	} {
		if code, _, stderr := runCLI(bad...); code == 0 {
			t.Errorf("%v was taken: %s", bad[1:], stderr)
		}
	}
}
