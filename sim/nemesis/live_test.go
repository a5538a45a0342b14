package nemesis

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// liveFlood is a key flooded at one gateway: n admits, one every gap from
// at, each answered 1 ms after it was sent.
func liveFlood(key string, g int, at, gap time.Duration, n int) []LiveDecision {
	var ds []LiveDecision
	for i := range n {
		s := at + time.Duration(i)*gap
		ds = append(ds, LiveDecision{Key: key, Gateway: g, Sent: s, Answered: s + time.Millisecond, Admitted: true})
	}
	return ds
}

func liveRun(ds []LiveDecision, fs ...LiveFault) LiveRun {
	return LiveRun{Design: "central-log", Limit: 10, Window: time.Second, Gateways: 3, Sync: 100 * time.Millisecond,
		Slack: 0, Decisions: ds, Faults: fs}
}

// A window of L admits passes; one of L + 2 fails (the first admit is in
// the late term's first millisecond), named with its key and start; a
// window's admits are the calls wholly inside it.
func TestCheckLiveHoldsTheBound(t *testing.T) {
	ok := liveFlood("a", 0, 0, 100*time.Millisecond, 10)
	if vs, err := CheckLive(liveRun(ok)); err != nil || len(vs) != 0 {
		t.Fatalf("L admits a window: %v %v", vs, err)
	}
	over := liveFlood("a", 0, 0, 80*time.Millisecond, 12)
	vs, err := CheckLive(liveRun(over))
	if err != nil || len(vs) != 1 || vs[0].Key != "a" || vs[0].Got != 12 || vs[0].Bound != 11 || vs[0].From != 0 {
		t.Fatalf("L + 2 admits in a window: %v %v", vs, err)
	}
	// The last call answered after the window's end: it may have been
	// stamped after it, so it is not counted.
	over[11].Answered = time.Second + time.Millisecond
	over[11].Sent = 950 * time.Millisecond
	if vs, _ := CheckLive(liveRun(over)); len(vs) != 0 {
		t.Fatalf("an admit whose call crossed the window's end was counted: %v", vs)
	}
	// Rejections are not admits.
	rej := append(liveFlood("a", 0, 0, 100*time.Millisecond, 10), LiveDecision{Key: "a", Sent: 500 * time.Millisecond, Answered: 501 * time.Millisecond})
	if vs, _ := CheckLive(liveRun(rej)); len(vs) != 0 {
		t.Fatalf("a rejection counted: %v", vs)
	}
}

// An outage adds K − 1 + U + B to the windows that meet it; a window wholly
// inside a long one holds L + K − 1; two records of one outage add once.
func TestCheckLiveOutageTerms(t *testing.T) {
	out := LiveFault{Kind: LiveOutage, From: 10 * time.Second, To: 14 * time.Second}
	// Inside the outage, from 11 s: L + K − 1 = 12 a window, and the late
	// term's one.
	inside := liveFlood("a", 0, 12*time.Second, 80*time.Millisecond, 12)
	if vs, _ := CheckLive(liveRun(inside, out)); len(vs) != 0 {
		t.Fatalf("L + K − 1 inside an outage: %v", vs)
	}
	if vs, _ := CheckLive(liveRun(liveFlood("a", 0, 12*time.Second, 70*time.Millisecond, 14), out)); len(vs) != 1 || vs[0].Bound != 13 {
		t.Fatalf("L + K inside an outage passed or was held to the wrong bound: %v", vs)
	}
	// A window across the outage's start: K − 1 + U, U its admits from
	// t0 − 2Δ on (at most the bound).
	across := liveFlood("a", 0, 9500*time.Millisecond, 40*time.Millisecond, 24)
	vs, _ := CheckLive(liveRun(across, out))
	if len(vs) != 1 || !strings.Contains(vs[0].Terms, "outage K − 1 + U") {
		t.Fatalf("24 admits across the outage's start: %v", vs)
	}
	if vs, _ := CheckLive(liveRun(across[:20], out, out)); len(vs) != 0 {
		t.Fatalf("20 admits across an outage's start (bound 10 + 2 + 10 at most): %v", vs)
	}
	twice, _ := CheckLive(liveRun(across, out, out, LiveFault{Kind: LiveOutage, From: 11 * time.Second, To: 12 * time.Second}))
	if len(twice) != 1 || twice[0].Bound != vs[0].Bound {
		t.Fatalf("an outage recorded thrice counted more than once: %v against %v", twice, vs)
	}
}

// A forget and a restart add their terms only to the windows that meet
// them; far from them the bound is the design's.
func TestCheckLiveForgetAndRestart(t *testing.T) {
	ds := liveFlood("a", 1, 5*time.Second, 50*time.Millisecond, 20) // 20 in a second at gateway 1
	if vs, _ := CheckLive(liveRun(ds)); len(vs) != 1 {
		t.Fatal("20 admits a second passed without a fault")
	}
	restart := LiveFault{Kind: LiveRestart, From: 5500 * time.Millisecond, To: 5600 * time.Millisecond, Gateway: 1}
	if vs, _ := CheckLive(liveRun(ds, restart)); len(vs) != 0 {
		t.Fatalf("a restart of the gateway that made half the admits: %v", vs)
	}
	restart.Gateway = 2
	if vs, _ := CheckLive(liveRun(ds, restart)); len(vs) == 0 {
		t.Fatal("a restart of another gateway excused the admits")
	}
	// 14 admits in the 70 ms after a forget: K and every one of them.
	burst := liveFlood("a", 1, 5*time.Second, 5*time.Millisecond, 14)
	forget := LiveFault{Kind: LiveForget, From: 5 * time.Second, To: 5 * time.Second}
	if vs, _ := CheckLive(liveRun(burst, forget)); len(vs) != 0 {
		t.Fatalf("a forget: %v", vs)
	}
	far := LiveFault{Kind: LiveForget, From: 50 * time.Second, To: 50 * time.Second}
	if vs, _ := CheckLive(liveRun(burst, far)); len(vs) != 1 || vs[0].Bound != 11 {
		t.Fatalf("a forget far away changed the bound: %v", vs)
	}
}

// Bad runs are refused with what is wrong; headroom and central-counter,
// which the live check cannot hold, are refused by name.
func TestCheckLiveRefuses(t *testing.T) {
	for _, c := range []struct {
		edit func(*LiveRun)
		say  string
	}{
		{func(r *LiveRun) { r.Design = "nonesuch" }, "no stated bound"},
		{func(r *LiveRun) { r.Design = "headroom" }, "budgets"},
		{func(r *LiveRun) { r.Design = "central-counter" }, "fixed windows"},
		{func(r *LiveRun) { r.Limit = 0 }, "positive"},
		{func(r *LiveRun) { r.Decisions[0].Gateway = 3 }, "gateway of 0 to 2"},
		{func(r *LiveRun) { r.Decisions[0].Answered = -1 }, "answered after sent"},
	} {
		r := liveRun(liveFlood("a", 0, 0, time.Millisecond, 1))
		c.edit(&r)
		if _, err := CheckLive(r); err == nil || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%+v: got %v, want an error saying %q", r, err, c.say)
		}
	}
}

func ExampleCheckLive() {
	run := LiveRun{Design: "central-log", Limit: 2, Window: time.Second, Gateways: 2, Sync: 100 * time.Millisecond}
	for i := range 4 {
		at := time.Duration(i) * 100 * time.Millisecond
		run.Decisions = append(run.Decisions, LiveDecision{Key: "alice", Sent: at, Answered: at + time.Millisecond, Admitted: true})
	}
	vs, _ := CheckLive(run)
	fmt.Println(vs[0])
	// Output: key alice: the window from 0.000s holds 4 admits, over its bound 3 (bound 2, late 1)
}

// docs/nemesis.md carries the live terms as the checker holds them.
func TestDocsTableTheLiveTerms(t *testing.T) {
	doc, err := os.ReadFile("../../docs/nemesis.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), LiveMarkdown()) {
		t.Fatalf("docs/nemesis.md lacks the live terms table; paste in:\n%s", LiveMarkdown())
	}
}
