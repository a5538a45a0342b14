package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/internal/slowproxy"
	"github.com/fleetlimit/fleetlimit/sim/nemesis"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// The live nemesis: three serve processes on a real redis-server behind a
// fault proxy, under load from clients on 100 keys, while faults come at
// random (Redis paused, killed and restarted empty, FLUSHALLed, slowed past
// the call timeout or below it; a serve process killed with SIGKILL and
// started again). Every decision a client was told is recorded, and
// afterwards nemesis.CheckLive holds every window of every key to the
// design's bound plus its faults' terms; the store's count after the last
// fault to the admits clients were told; and, for central-log, the
// decisions to a linearizable counter (porcupine). The suite runs it for
// about a minute; scripts/nemesis-live runs it for ten (the
// FLEETLIMIT_NEMESIS_LIVE duration).

// liveShape is the fleet and traffic of a live run.
const (
	liveK      = 3
	liveLimit  = 40
	liveWindow = 4 * time.Second
	liveSync   = 100 * time.Millisecond
	// liveTimeout is serve's store timeout: long enough that a loaded
	// machine's calls rarely fall back outside the faults.
	liveTimeout = 500 * time.Millisecond
	// liveSlack is how late a timer may fire on a loaded machine.
	liveSlack = 500 * time.Millisecond
)

const liveConfig = `domain: nem
descriptors:
  - key: k
    rate_limit:
      unit: second
      unit_multiplier: 4
      requests_per_unit: 40
fleetlimit:
  design: %s
  window_kind: sliding
  sync: 100ms
  timeout: 500ms
`

// liveKeys are the run's keys and their rates a second: three floods of
// 4 L a window, ten honest keys at 0.8 L, 87 quiet ones.
func liveKeys() map[string]float64 {
	keys := map[string]float64{}
	for i := range 3 {
		keys[fmt.Sprintf("f%d.", i)] = 4 * liveLimit / liveWindow.Seconds()
	}
	for i := range 10 {
		keys[fmt.Sprintf("b%d.", i)] = 0.8 * liveLimit / liveWindow.Seconds()
	}
	for i := range 87 {
		keys[fmt.Sprintf("q%02d.", i)] = 0.25
	}
	return keys
}

// liveLength is how long the faults last: FLEETLIMIT_NEMESIS_LIVE, or 40 s.
func liveLength(t *testing.T) time.Duration {
	s := os.Getenv("FLEETLIMIT_NEMESIS_LIVE")
	if s == "" {
		return 40 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 20*time.Second {
		t.Fatalf("FLEETLIMIT_NEMESIS_LIVE=%q: want a duration of 20s or more", s)
	}
	return d
}

// liveSeed is the fault schedule's seed: FLEETLIMIT_NEMESIS_SEED, or 1.
func liveSeed(t *testing.T) uint64 {
	s := os.Getenv("FLEETLIMIT_NEMESIS_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("FLEETLIMIT_NEMESIS_SEED=%q: want a whole number", s)
	}
	return n
}

// The default design and central-log, under the same faults: no window over
// its bound, the store's count equal to what clients were told, and
// central-log's decisions linearizable.
func TestLiveNemesis(t *testing.T) {
	skipLiveUnderRace(t)
	t.Parallel() // waits on the clock and on its own servers: beside the others
	for _, d := range []string{design.Default, "central-log"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			r := runLive(t, d, "")
			if vs := r.check(t); len(vs) > 0 {
				for _, v := range vs[:min(len(vs), 5)] {
					t.Errorf("%v", v)
				}
				t.Fatalf("%d keys had a window over its bound; the faults: %v", len(vs), r.run.Faults)
			}
			r.storeHoldsWhatClientsWereTold(t)
			if d == "central-log" {
				r.linearizable(t)
			}
		})
	}
}

// A fleetlimit built with the nemesisplant tag runs the default design with
// a fallback that starts from a fresh quota: the same schedule's check
// must find a window over the bound.
func TestLiveNemesisCatchesAPlantedBug(t *testing.T) {
	skipLiveUnderRace(t)
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "fleetlimit-planted")
	// -pgo=off, as the suite builds: the profile would rebuild every
	// package a second time for the same answers.
	out, err := exec.Command("go", "build", "-pgo=off", "-tags", "nemesisplant", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -tags nemesisplant: %v\n%s", err, out)
	}
	r := runLive(t, "nemesis-planted-fresh-fallback", bin)
	r.run.Design = design.Default // held to the bound of the design it claims to be
	vs := r.check(t)
	if len(vs) == 0 {
		t.Fatalf("the planted fresh-quota fallback passed the live check; the faults: %v", r.run.Faults)
	}
	t.Logf("caught: %d keys over their bound, the worst %v", len(vs), vs[0])
}

// skipLiveUnderRace skips a live nemesis test under the race detector,
// whose pace would put most of its serve processes' calls on the
// fallback: ./scripts/test runs them without it, beside the other jobs.
func skipLiveUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the live nemesis runs without the race detector: ./scripts/test runs it in a job of its own")
	}
}

// liveResult is one live run's record.
type liveResult struct {
	run     nemesis.LiveRun
	start   time.Time
	closing time.Duration  // the closing phase's start: no fault, an empty window
	held    map[string]int // the closing phase's admits Redis held, by key
	// implied are the outages a serve's fallback count showed outside the
	// nemesis's faults (a starved call), and in them
	implied []nemesis.LiveFault
	redis   *redistest.Server
	errs    int64
	skipped int64
}

// check runs the checker on the run and logs what the clients saw.
func (r *liveResult) check(t *testing.T) []nemesis.LiveViolation {
	t.Helper()
	run := r.run
	run.Faults = append(slices.Clone(run.Faults), r.implied...)
	vs, err := nemesis.CheckLive(run)
	if err != nil {
		t.Fatal(err)
	}
	logLiveFigures(t, r)
	return vs
}

// logLiveFigures logs the run's decisions, its faults by kind, and the
// honest keys' rejections with and without faults.
func logLiveFigures(t *testing.T, r *liveResult) {
	kinds := map[nemesis.LiveKind]int{}
	for _, f := range r.run.Faults {
		kinds[f.Kind]++
	}
	admits := 0
	var honest, rejected, calmHonest, calmRejected int
	faults := append(slices.Clone(r.run.Faults), r.implied...)
	for _, d := range r.run.Decisions {
		if d.Admitted {
			admits++
		}
		if d.Key[0] == 'f' {
			continue
		}
		calm := !liveFaulty(faults, d.Sent)
		honest++
		if calm {
			calmHonest++
		}
		if !d.Admitted {
			rejected++
			if calm {
				calmRejected++
			}
		}
	}
	t.Logf("%s: %d decisions (%d admits), %d errors (a gateway down), %d not sent (256 in flight); faults %v, and %d scrapes (of 250 ms) whose fallback count grew",
		r.run.Design, len(r.run.Decisions), admits, r.errs, r.skipped, kinds, len(r.implied))
	t.Logf("honest keys: %d of %d rejected (%.2f%%); away from every fault: %d of %d (%.2f%%)",
		rejected, honest, pct(int64(rejected), int64(honest)), calmRejected, calmHonest, pct(int64(calmRejected), int64(calmHonest)))
}

// liveFaulty reports whether at lies within a window after a fault's span.
func liveFaulty(fs []nemesis.LiveFault, at time.Duration) bool {
	for _, f := range fs {
		if at >= f.From && at < max(f.To, f.From)+liveWindow+2*liveSync+liveSlack {
			return true
		}
	}
	return false
}

// runLive runs the live nemesis on design, with the serve of bin ("" for
// this test binary), and returns what the clients were told.
func runLive(t *testing.T, designName, bin string) *liveResult {
	srv := redistest.Start(t)
	proxy := slowproxy.Start(t, srv.Addr)
	cfg := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(liveConfig, designName)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &liveFleet{t: t, bin: bin, cfg: cfg, redis: proxy.Addr}
	for g := range liveK {
		f.start(g)
	}
	r := &liveResult{start: time.Now(), redis: srv, run: nemesis.LiveRun{
		Design: designName, Limit: liveLimit, Window: liveWindow, Gateways: liveK, Sync: liveSync, Slack: liveSlack}}
	load := &liveLoad{fleet: f, res: r, sem: make(chan struct{}, 256)}
	watch := f.watchFallbacks(r)

	stop := load.drive(liveKeys())
	faults := &liveNemesis{t: t, rng: rand.New(rand.NewPCG(liveSeed(t), 7)), srv: srv, proxy: proxy, fleet: f, res: r}
	faults.run(liveLength(t))
	time.Sleep(liveWindow + 2*time.Second) // calm, under load: the faults' spans end
	stop()
	// The closing phase starts on an empty window and lasts less than one:
	// no admit leaves it, so the store's count is a plain sum, and
	// central-log's decisions a counter's.
	time.Sleep(liveWindow + time.Second)
	r.closing = time.Since(r.start)
	stop = load.drive(liveKeys())
	time.Sleep(liveWindow / 2)
	stop()
	time.Sleep(3*liveSync + 300*time.Millisecond) // the last syncs, before the first stamps leave the store's window
	r.held = storeHeld(t, srv.Addr, r.start.Add(r.closing))
	watch()
	f.stopAll()
	return r
}

// liveFleet is the serve processes of a live run.
type liveFleet struct {
	t          *testing.T
	bin        string
	cfg, redis string
	mu         sync.RWMutex
	clients    [liveK]pb.RateLimitServiceClient
	https      [liveK]string
	procs      [liveK]*exec.Cmd
}

// start starts gateway g's serve process and waits until it answers.
func (f *liveFleet) start(g int) {
	c, h, p := startServeBin(f.t, f.bin, f.cfg, f.redis, fmt.Sprintf("serve %d: ", g),
		"--gateways", fmt.Sprint(liveK), "--gateway", fmt.Sprint(g), "--claim-ttl", "1s")
	f.mu.Lock()
	f.clients[g], f.https[g], f.procs[g] = c, h, p
	f.mu.Unlock()
}

// kill kills gateway g's process with SIGKILL: it loses everything it held.
func (f *liveFleet) kill(g int) {
	f.mu.RLock()
	p := f.procs[g]
	f.mu.RUnlock()
	p.Process.Kill()
	p.Wait()
}

// client returns gateway g's client.
func (f *liveFleet) client(g int) pb.RateLimitServiceClient {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clients[g]
}

// stopAll stops every process gracefully (it flushes), and fails the test
// if one does not exit 0.
func (f *liveFleet) stopAll() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for g, p := range f.procs {
		if err := stopServe(p, 15*time.Second); err != nil {
			f.t.Errorf("serve %d %v", g, err)
		}
	}
}

// watchFallbacks reads each process's fallback count every 250 ms, and
// records an outage wherever one grew outside the nemesis's faults (a
// store call the loaded machine starved past the timeout is one, which
// the clients see as no fault). It returns a function that stops it.
func (f *liveFleet) watchFallbacks(r *liveResult) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	var implied []nemesis.LiveFault
	go func() {
		defer close(stopped)
		last := map[string]float64{}
		prev := time.Since(r.start)
		for {
			select {
			case <-done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			now := time.Since(r.start)
			f.mu.RLock()
			https := f.https
			f.mu.RUnlock()
			for _, h := range https {
				n, ok := scrape(h, "fleetlimit_fallback_decisions_total")
				if ok && n > last[h] {
					implied = append(implied, nemesis.LiveFault{Kind: nemesis.LiveOutage, From: prev - liveTimeout, To: now})
				}
				if ok {
					last[h] = n
				}
			}
			prev = now
		}
	}()
	return func() {
		close(done)
		<-stopped
		r.implied = implied
	}
}

// scrape reads one metric of the serve at addr; false if it did not answer
// (a process down).
func scrape(addr, name string) (float64, bool) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// liveLoad sends the clients' requests and records every decision.
type liveLoad struct {
	fleet *liveFleet
	res   *liveResult
	sem   chan struct{}
	mu    sync.Mutex
	next  atomic.Uint64
}

// drive starts a client for each key at its rate, and returns a function
// that stops them and waits for every request in flight.
func (l *liveLoad) drive(keys map[string]float64) func() {
	done := make(chan struct{})
	var wg, calls sync.WaitGroup
	for key, rate := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gap := time.Duration(float64(time.Second) / rate)
			tick := time.NewTicker(gap)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				select {
				case l.sem <- struct{}{}:
				default:
					atomic.AddInt64(&l.res.skipped, 1)
					continue
				}
				calls.Add(1)
				go func() {
					defer func() { <-l.sem; calls.Done() }()
					l.call(key)
				}()
			}
		}()
	}
	return func() { close(done); wg.Wait(); calls.Wait() }
}

// call sends one request for key to the next gateway and records its
// decision.
func (l *liveLoad) call(key string) {
	g := int(l.next.Add(1) % liveK)
	req := &pb.RateLimitRequest{Domain: "nem", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: key}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	sent := time.Since(l.res.start)
	resp, err := l.fleet.client(g).ShouldRateLimit(ctx, req)
	answered := time.Since(l.res.start)
	if err != nil {
		atomic.AddInt64(&l.res.errs, 1)
		return
	}
	l.mu.Lock()
	l.res.run.Decisions = append(l.res.run.Decisions, nemesis.LiveDecision{Key: key, Gateway: g, Sent: sent, Answered: answered,
		Admitted: resp.OverallCode == pb.RateLimitResponse_OK})
	l.mu.Unlock()
}

// liveNemesis applies faults at random.
type liveNemesis struct {
	t     *testing.T
	rng   *rand.Rand
	srv   *redistest.Server
	proxy *slowproxy.Proxy
	fleet *liveFleet
	res   *liveResult
}

// liveFaults are the kinds the nemesis draws, each once in every round in
// an order the seed shuffles.
var liveFaults = []string{"pause", "long pause", "kill redis", "flushall", "stall", "slow", "kill gateway"}

// run applies faults, one to six seconds apart, for length.
func (n *liveNemesis) run(length time.Duration) {
	var bag []string
	for time.Since(n.res.start) < length {
		time.Sleep(time.Second + time.Duration(n.rng.Int64N(int64(5*time.Second))))
		if len(bag) == 0 {
			bag = append(bag, liveFaults...)
			n.rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		n.apply(bag[0])
		bag = bag[1:]
	}
}

// apply applies one fault and records it.
func (n *liveNemesis) apply(kind string) {
	now := func() time.Duration { return time.Since(n.res.start) }
	some := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(n.rng.Int64N(int64(hi-lo))) }
	record := func(f nemesis.LiveFault) {
		n.res.run.Faults = append(n.res.run.Faults, f)
		n.t.Logf("nemesis: %v", f)
	}
	from := now()
	switch kind {
	case "pause", "long pause":
		d := some(500*time.Millisecond, 3*time.Second)
		if kind == "long pause" { // a window inside it: the fallback alone
			d = 2*liveWindow + 2*liveSlack + time.Second
		}
		n.srv.Pause()
		time.Sleep(d)
		n.srv.Resume()
		record(nemesis.LiveFault{Kind: nemesis.LiveOutage, From: from, To: now()})
	case "kill redis":
		n.srv.Down()
		time.Sleep(some(300*time.Millisecond, 2*time.Second))
		at := now()
		n.srv.Restart()
		record(nemesis.LiveFault{Kind: nemesis.LiveOutage, From: from, To: now()})
		record(nemesis.LiveFault{Kind: nemesis.LiveForget, From: at, To: at})
	case "flushall":
		n.srv.Forget("flushall")
		record(nemesis.LiveFault{Kind: nemesis.LiveForget, From: from, To: now()})
	case "stall": // slower than the timeout: an outage, until the queued calls drain
		d := 2 * time.Second
		n.proxy.SetDelay(d)
		time.Sleep(some(500*time.Millisecond, 3*time.Second))
		n.proxy.SetDelay(0)
		record(nemesis.LiveFault{Kind: nemesis.LiveOutage, From: from, To: now() + d})
	case "slow": // slower, within the timeout
		d := some(10*time.Millisecond, 100*time.Millisecond)
		n.proxy.SetDelay(d)
		time.Sleep(some(time.Second, 4*time.Second))
		n.proxy.SetDelay(0)
		record(nemesis.LiveFault{Kind: nemesis.LiveSlow, From: from, To: now() + d, Delay: d})
	case "kill gateway":
		g := n.rng.IntN(liveK)
		n.fleet.kill(g)
		time.Sleep(some(200*time.Millisecond, 2*time.Second))
		n.fleet.start(g)
		record(nemesis.LiveFault{Kind: nemesis.LiveRestart, From: from, To: now(), Gateway: g})
	}
}

// storeHoldsWhatClientsWereTold compares, key by key, the admits Redis
// held from the closing phase with those its clients were told of.
func (r *liveResult) storeHoldsWhatClientsWereTold(t *testing.T) {
	told := map[string]int{}
	for _, d := range r.run.Decisions {
		if d.Sent >= r.closing && d.Admitted {
			told[d.Key]++
		}
	}
	total, bad := 0, 0
	for key := range liveKeys() {
		total += told[key]
		if r.held[key] != told[key] {
			bad++
			if bad <= 5 {
				t.Errorf("key %s: Redis holds %d admits of the closing phase, its clients were told of %d", key, r.held[key], told[key])
			}
		}
	}
	if total == 0 {
		t.Fatal("no admit in the closing phase")
	}
	t.Logf("closing phase: %d admits told; Redis holds as many on %d of %d keys", total, len(liveKeys())-bad, len(liveKeys()))
}

// storeHeld reads, key by key, the admits stamped from on that the Redis
// at addr holds, as serve lays its keys out (nem.k_KEY|SECOND*4).
func storeHeld(t *testing.T, addr string, from time.Time) map[string]int {
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held := map[string]int{}
	for key := range liveKeys() {
		stamps, err := redisinspect.Of(st).Stamps(context.Background(), "nem.k_"+key+"|SECOND*4")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stamps {
			if s >= from.UnixNano() {
				held[key]++
			}
		}
	}
	return held
}

// linearizable checks central-log's decisions of the closing phase against
// a counter: each key's window starts empty and none of its admits leaves
// it, so an admit is right iff fewer than L came before it in some order
// that respects every call's span.
func (r *liveResult) linearizable(t *testing.T) {
	for _, f := range r.implied {
		if f.To >= r.closing { // a fallback decided in it: not the store's decision
			t.Logf("a store call fell back in the closing phase (%v): its decisions are not all the store's, and the linearizability check is skipped", f)
			return
		}
	}
	var ops []porcupine.Operation
	for _, d := range r.run.Decisions {
		if d.Sent >= r.closing {
			ops = append(ops, porcupine.Operation{Input: d.Key, Output: d.Admitted, Call: int64(d.Sent), Return: int64(d.Answered)})
		}
	}
	model := porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			for _, o := range h {
				by[o.Input.(string)] = append(by[o.Input.(string)], o)
			}
			var out [][]porcupine.Operation
			for _, p := range by {
				out = append(out, p)
			}
			return out
		},
		Init: func() any { return 0 },
		Step: func(state, _, output any) (bool, any) {
			n := state.(int)
			if output.(bool) {
				return n < liveLimit, n + 1
			}
			return n >= liveLimit, n
		},
	}
	res := porcupine.CheckOperationsTimeout(model, ops, 30*time.Second)
	t.Logf("closing phase: %d central-log decisions, linearizable: %s", len(ops), res)
	if res == porcupine.Illegal {
		t.Fatal("central-log's decisions of the closing phase are not linearizable as one counter per key")
	}
}
