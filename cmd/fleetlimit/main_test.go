package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestSimBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"sim", "--design", "magic"}, `unknown design "magic": want one of central-log, split`},
		{[]string{"sim", "--gateways", "0"}, "gateways 0: must be between 1 and 4096"},
		{[]string{"sim", "--sync", "0s"}, "sync 0s: must be a positive duration"},
		{[]string{"sim", "--sync", "-1s"}, "sync -1s: must be a positive duration"},
		{[]string{"sim", "--traffic", "steady"}, `traffic "steady": want steady:F`},
		{[]string{"sim", "--traffic", "flood:x"}, `factor "x" is not a positive number`},
		{[]string{"sim", "--traffic", "burst:3"}, `unknown model "burst"`},
		{[]string{"sim", "--duration", "30s"}, "duration 30s: must be longer than the window (1m0s)"},
		{[]string{"sim", "--routing", "random"}, `routing "random": want even or uneven`},
		{[]string{"sim", "--window-kind", "tumbling"}, `window kind "tumbling": want sliding or fixed`},
		{[]string{"sim", "--window-kind", "sliding/x"}, `window "sliding/x": want KIND or KIND/BUCKETS`},
		{[]string{"sim", "--window-kind", "sliding/60", "--window-buckets", "6"}, "--window-kind sliding/60 and --window-buckets 6 disagree"},
		{[]string{"sim", "--window-kind", "fixed", "--window-buckets", "60"}, "a fixed window is one counter, so want 0 (the exact log) or 1"},
		{[]string{"sim", "--window-buckets", "-1"}, "window buckets -1: want 0 (the exact log) to 3600"},
		{[]string{"sim", "--members", "5m"}, `members "5m": want T:K`},
		{[]string{"sim", "--members", "2h:3"}, "members change at 2h0m0s: must be inside the run"},
		{[]string{"sim", "--seeds", "0"}, "seeds 0: must be between 1 and 100000"},
		{[]string{"sim", "--limit", "0"}, "limit 0: must be at least 1"},
		{[]string{"sim", "--gateways", "many"}, `invalid argument "many"`},
		{[]string{"sim", "--traffic", "flood:1e8", "--duration", "24h"}, "more than the 2e+09 a run allows"},
		{[]string{"sim", "--traffic", "steady:0.8,flood:100@9"}, "it targets 9 gateways of 8"},
		{[]string{"sim", "--traffic", "flood:100+2h"}, "it starts at 2h0m0s, not before the run ends at 1h0m0s"},
		{[]string{"sim", "--traffic", "flood:100~1s"}, "is not ON/OFF"},
		{[]string{"sim", "--keys", "0"}, "keys 0: must be between 1 and 100000"},
		{[]string{"sim", "--keys", "10", "--key-dist", "zipf:0"}, `key distribution "zipf:0": S must be a number in (0, 10]`},
		{[]string{"sim", "--key-dist", "pareto"}, `key distribution "pareto": want uniform or zipf:S`},
		{[]string{"sim", "--keys", "100000", "--traffic", "flood:1000"}, "more than the 2e+09 a run allows"},
		{[]string{"sim", "--traffic", "flood:1e12"}, `factor "1e12" is over 1e+09`},
		{[]string{"sim", "--workers", "-1"}, "--workers -1: want 0 (one per core) to 1024"},
		{[]string{"study", "--quick", "--workers", "1000000"}, "--workers 1000000: want 0 (one per core) to 1024"},
		{[]string{"advise", "--workers", "2000"}, "--workers 2000: want 0 (one per core) to 1024"},
		{[]string{"advise", "--max-store-calls", "-1"}, "max store calls -1"},
		{[]string{"serve", "--config", "../../examples/ratelimit.yaml", "--http-addr", "notanaddr"}, `--http-addr "notanaddr": want host:port`},
		{[]string{"serve", "--config", "../../examples/ratelimit.yaml", "--grpc-addr", "127.0.0.1:99999"}, `--grpc-addr "127.0.0.1:99999": the port is not`},
		{[]string{"sim", "--timeline", "1s", "--seeds", "3"}, "--timeline shows one run: give --seed S, not --seeds 3"},
		{[]string{"sim", "--timeline", "-1s"}, "--timeline -1s: want a positive bucket width"},
		{[]string{"sim", "--timeline", "run.jpg"}, `--timeline "run.jpg": want a bucket width such as 1s, or a file ending in .svg or .png`},
		{[]string{"sim", "--timeline", "run.svg", "--json"}, "--timeline run.svg draws the run; --json prints it: give one"},
		{[]string{"sim", "--timeline-until", "1m"}, "--timeline: give a bucket width such as 1s, or a file to draw the run into"},
		{[]string{"sim", "--timeline", "1ms", "--timeline-until", "1h"}, "more than 10000: widen the bucket or shorten the span"},
		{[]string{"sim", "extra"}, `unknown command "extra"`},
		{[]string{"nonsense"}, `unknown command "nonsense"`},
	} {
		code, out, errs := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errs)
		}
		if out != "" {
			t.Errorf("%v: printed %q on stdout", c.args, out)
		}
		if lines := strings.Count(strings.TrimSpace(errs), "\n") + 1; lines != 1 || !strings.Contains(errs, c.say) {
			t.Errorf("%v: stderr %q, want one line saying %q", c.args, errs, c.say)
		}
	}
}

func TestSimJSON(t *testing.T) {
	code, out, errs := runCLI("sim", "--design", "shared-counter", "--gateways", "4", "--sync", "1s",
		"--traffic", "flood:30", "--duration", "10m", "--seed", "3", "--seeds", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Design       string  `json:"design"`
		Seeds        int     `json:"seeds"`
		AdmittedX    float64 `json:"admitted_x"`
		WorstWindowX float64 `json:"worst_window_x"`
		RejectedPct  float64 `json:"rejected_pct"`
		RoundTripPct float64 `json:"round_trip_pct"`
		Runs         []struct {
			Seed      uint64  `json:"seed"`
			Requests  int64   `json:"requests"`
			Admitted  int64   `json:"admitted"`
			Rejected  int64   `json:"rejected"`
			Syncs     int64   `json:"syncs"`
			AdmittedX float64 `json:"admitted_x"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if doc.Design != "shared-counter" || doc.Seeds != 3 || len(doc.Runs) != 3 {
		t.Fatalf("header %+v", doc)
	}
	var sum float64
	for i, r := range doc.Runs {
		if r.Seed != uint64(3+i) || r.Admitted+r.Rejected != r.Requests || r.Syncs == 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		sum += r.AdmittedX
	}
	if d := sum/3 - doc.AdmittedX; d > 1e-9 || d < -1e-9 {
		t.Fatalf("admitted_x %g is not the mean of the runs (%g)", doc.AdmittedX, sum/3)
	}
	if doc.AdmittedX <= 1 {
		t.Fatalf("shared-counter under flood:30 at K=4 admitted %g x L: want an overshoot", doc.AdmittedX)
	}
}

func TestSimText(t *testing.T) {
	code, out, errs := runCLI("sim", "--design", "lease", "--traffic", "steady:0.8", "--duration", "10m", "--seeds", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"--design lease --gateways 8", "admitted_x", "worst_window_x", "mean"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestStudyCLI(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("study", "--quick", "--out", dir, "--filter", "k=2 sync=1s design=shared-counter,lease")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "25 runs") {
		t.Fatalf("does not print the run count first:\n%s", out)
	}
	if !strings.Contains(errs, "25/25 runs (100%)") {
		t.Fatalf("no plain progress line when not on a terminal: %q", errs)
	}
	code, out, errs = runCLI("study", "--report", dir)
	if code != 0 || !strings.Contains(out, "report rebuilt from 25 runs") {
		t.Fatalf("--report: exit %d, %s %s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"study"}, 2, "--out DIR is required"},
		{[]string{"study", "--out", dir, "--filter", "k=3"}, 2, `filter "k=3" selects no run`},
		{[]string{"study", "--out", dir, "--filter", "colour=red"}, 2, `filter key "colour"`},
		{[]string{"study", "--report", dir, "--quick"}, 2, "takes no --out, --quick or --filter"},
		{[]string{"study", "--report", t.TempDir()}, 1, "results.csv: no such file"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != c.code || !strings.Contains(errs, c.say) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args, code, errs, c.code, c.say)
		}
	}
}

// Inputs that once ran the simulator out of memory or into an endless loop
// exit 2 with one line.
func TestSimInputsThatMustNotRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"sim", "--traffic", "steady:1e-300"}, "fewer than one"},
		{[]string{"sim", "--duration", "2562047h", "--window", "2562046h"}, "must be at most"},
		{[]string{"sim", "--sync", "1ns", "--design", "lease"}, "sync 1ns: must be at least 1ms"},
		{[]string{"sim", "--limit", "2000000000", "--traffic", "flood:0.5", "--duration", "2m"}, "limit 2000000000: must be at least 1 and at most"},
		{[]string{"sim", "--gateways", "4096", "--sync", "1ms", "--duration", "24h"}, "syncs: more than"},
	} {
		code, out, errs := runCLI(c.args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.say) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", c.args, code, out, errs, c.say)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI("--version")
	if code != 0 || !strings.HasPrefix(out, "fleetlimit version ") || len(strings.TrimSpace(out)) < len("fleetlimit version devel") {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
}

func TestValidate(t *testing.T) {
	code, out, errs := runCLI("validate", "../../examples/ratelimit.yaml")
	if code != 0 || !strings.Contains(out, "edge.api_key: 100 per MINUTE") || errs != "" {
		t.Fatalf("valid file: exit %d\n%s\n%s", code, out, errs)
	}
	bad := t.TempDir() + "/bad.yaml"
	os.WriteFile(bad, []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 3}\n"), 0o644)
	code, out, errs = runCLI("validate", bad, "../../examples/ratelimit.yaml")
	if code != 1 || !strings.Contains(errs, "bad.yaml:4: invalid rate limit unit 'fortnight'") || !strings.Contains(out, "ratelimit.yaml: valid") {
		t.Fatalf("one bad file: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, _ := runCLI("validate"); code != 2 {
		t.Fatalf("no file: exit %d, want 2", code)
	}
	fl := t.TempDir() + "/fleet.yaml"
	os.WriteFile(fl, []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 3}\n"+
		"---\nfleetlimit:\n  window_kind: sliding\n  window_buckets: 60\n  membership: true\n"), 0o644)
	if code, out, errs := runCLI("validate", fl); code != 0 || !strings.Contains(out, "window sliding (60 counters)") ||
		!strings.Contains(out, "gateways and index from Redis (membership)") {
		t.Fatalf("counters and membership: exit %d\n%s\n%s", code, out, errs)
	}
	os.WriteFile(fl, []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 3}\n"+
		"---\nfleetlimit:\n  window_buckets: 60\n"), 0o644)
	if code, _, errs := runCLI("validate", fl); code != 1 || !strings.Contains(errs, "window_buckets 60: a fixed window is one counter") {
		t.Fatalf("a fixed window in 60 counters: exit %d\n%s", code, errs)
	}
}

// Against a target that answers nothing, loadgen stops at once and says
// why, instead of firing requests for its whole duration.
func TestLoadgenStopsWhenEveryRequestFails(t *testing.T) {
	start := time.Now()
	code, _, errs := runCLI("loadgen", "--target", freeAddr(t), "--duration", "20s", "--concurrency", "4", "--conns", "1")
	if code != 1 || !strings.Contains(errs, "no request succeeded") || !strings.Contains(errs, "connection refused") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("loadgen ran %v against a dead target", took)
	}
}

// sim --timeline --json: the buckets asked for, and the run's figures the
// same as sim --json's for the same flags.
func TestSimTimelineJSON(t *testing.T) {
	args := []string{"sim", "--design", "shared-counter", "--traffic", "flood:100", "--duration", "2m", "--json"}
	code, out, errs := runCLI(append(args, "--timeline", "1s", "--timeline-until", "10s")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var tl struct {
		Result struct {
			AdmittedX float64 `json:"admitted_x"`
		} `json:"result"`
		Timeline struct {
			Admits   [][]int `json:"admits"`
			InWindow []int   `json:"in_window"`
		} `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(out), &tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.Timeline.Admits) != 10 || len(tl.Timeline.Admits[0]) != 8 || tl.Timeline.InWindow[9] <= 100 {
		t.Fatalf("timeline: %d buckets of %d gateways, %v in the window at 10s; want 10 of 8, over L", len(tl.Timeline.Admits), len(tl.Timeline.Admits[0]), tl.Timeline.InWindow)
	}
	code, out, _ = runCLI(args...)
	var plain struct {
		AdmittedX float64 `json:"admitted_x"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &plain) != nil || plain.AdmittedX != tl.Result.AdmittedX {
		t.Fatalf("sim --json admitted_x %v, the timeline's run %v", plain.AdmittedX, tl.Result.AdmittedX)
	}
}

// advise names the threat it assumed and what the same flood spread over
// every gateway does to its first candidate, and holds the store's load
// to --max-store-calls.
func TestAdviseSaysTheThreatAndTheStoreLoad(t *testing.T) {
	code, out, errs := runCLI("advise", "--gateways", "4", "--sync", "1s,3s", "--seeds", "1", "--threat", "flood:30@1",
		"--max-store-calls", "2", "--max-round-trips", "50", "--max-over", "1.3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"threat assumed: flood:30@1", "store calls ≤ 2 per key per second", "store/s", "spread_x",
		"It was chosen against flood:30@1; the same flood spread over every gateway would make its worst window"} {
		if !strings.Contains(out, want) {
			t.Errorf("advise's output lacks %q:\n%s", want, out)
		}
	}
	// at K = 4 a sync every second is 4 calls a second: over the budget
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[2] == "1s" && f[3] == "yes" && f[1] != "central-log" {
			t.Errorf("a candidate syncing every second fits a budget of 2 store calls a second: %s", line)
		}
	}
}
