// Package design holds fleetlimit's coordination designs: the rule each
// gateway applies to admit or reject a request for one key, and what it
// exchanges with the central store.
//
// Every design is a single-threaded state machine. It is handed the time and
// the store's answers and never reaches out for them: no clock, no
// goroutines, no global random source, no I/O. The simulator and the live
// runtime drive the very same code.
package design

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// Verdict is a gateway's answer to a request.
type Verdict uint8

const (
	// Reject turns the request away.
	Reject Verdict = iota
	// Admit lets the request through.
	Admit
	// Ask means the gateway cannot decide alone: the driver sends the
	// returned Query to the store and finishes with Resume.
	Ask
)

// String returns "reject", "admit" or "ask".
func (v Verdict) String() string {
	switch v {
	case Reject:
		return "reject"
	case Admit:
		return "admit"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Gateway is one gateway's state for one key under one design.
//
// A driver's whole part in a decision is three steps: Decide; if told to
// Ask, send the Query to the store; Resume with the answer. While the store
// cannot be reached it calls Fallback instead, the local-quota rule every
// design shares.
//
// Times are nanoseconds on the driver's clock and never go backwards. A
// Gateway is not safe for concurrent use.
type Gateway interface {
	// Decide answers a request of cost n (n >= 1) arriving at now. When it
	// returns Ask, the driver must send the Query to the store and call
	// Resume with the answer before any other call.
	Decide(now int64, n int) (Verdict, store.Query)
	// Resume finishes a decision that asked the store.
	Resume(now int64, n int, q store.Query, a store.Answer) Verdict
	// Fallback decides a request of cost n alone, while the store cannot
	// be reached, from the last count the store reported (aged, and none
	// once a window has passed since) and this gateway's admits since:
	// admit while every gateway admitting as many would keep the window
	// within L (docs/design.md, "The live limiter"). Its admits reach the
	// store at the next sync.
	Fallback(now int64, n int) Verdict
	// Abandon ends a decision whose Query's answer never came back (the
	// call timed out or failed): the gateway takes back, at its next
	// contact with the store, whatever the query may have done there (a
	// central admit is withdrawn; with Config.Mend only, as it names its
	// queries), and decides the request by Fallback when fallback is set,
	// or rejects it.
	Abandon(now int64, n int, q store.Query, fallback bool) Verdict
	// Unadmit takes back a request of cost n that this gateway's last
	// Decide, Resume or Fallback admitted, q being the query it asked (the
	// zero Query if none), because another limit of the same key refused
	// it (Multi): a local admit is forgotten as if never made, a lease slot
	// returns to the gateway, and a central admit is withdrawn at the next
	// contact (with Config.Mend; without it a store answers a key's central
	// checks together, so none ever needs taking back).
	Unadmit(now int64, n int, q store.Query)
	// SyncPush starts a sync: it sets p, every field, to what this
	// gateway sends the store.
	SyncPush(now int64, p *store.Push)
	// SyncPull ends a sync with the store's answer to the last SyncPush,
	// which it reads and neither keeps nor changes.
	SyncPull(now int64, p *store.Pull)
	// Held returns the lease slots this gateway holds unused (0 outside
	// the lease designs).
	Held() int
	// View returns how many more requests this gateway would admit at now
	// as it sees the key, and the time its view next frees budget; 0 when
	// the design cannot tell (it learns at its next sync or round trip).
	// With fallback set it is the view of the Fallback rule.
	View(now int64, fallback bool) (remaining int, reset int64)
}

// Default is the design every entry point runs unless told otherwise: the
// one the study recommends for a fleet of unknown size (permit: its worst
// window is L + ⌊0.1 L⌋ whatever K, docs/study.md).
const Default = "permit"

// MaxGateways bounds K: several designs keep a counter per gateway.
const MaxGateways = 4096

// Config is what every design is built from.
type Config struct {
	Limit    int           // L: admits allowed per window, >= 1
	Window   window.Spec   // W and its kind
	Gateways int           // K: gateways in the fleet, >= 1
	Gateway  int           // this gateway's index, 0 <= Gateway < K
	Sync     time.Duration // Δ: time between this gateway's syncs, > 0
	// Epoch tells this gateway state's pushes for the key from those of
	// an earlier life of the same key at the same gateway (see
	// store.Push.Epoch); larger for every new life. The simulator, whose
	// gateways live once, leaves it 0.
	Epoch uint64
	// Mend readies the gateway for a store that fails calls or forgets:
	// its central checks name themselves (store.Query.Call), so that one
	// the driver abandons can be withdrawn, and it keeps a history of its
	// admits of the key that the store acknowledged, in HistoryBuckets + 1
	// counters of the window (about 100 bytes a key), so that when the
	// store turns out to have lost the key (store.Pull.Gen changed less
	// than a window after the last answer) it pushes them again
	// (store.Repair.Reseed). The live limiter sets it; the simulator when
	// its store fails (sim.Faults.Outages, Forgets), and otherwise keeps
	// its queries and pushes small.
	Mend bool
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Limit < 1:
		return fmt.Errorf("limit %d: must be at least 1", c.Limit)
	case c.Window.Size <= 0:
		return fmt.Errorf("window %v: must be positive", c.Window.Size)
	case c.Gateways < 1 || c.Gateways > MaxGateways:
		return fmt.Errorf("gateways %d: must be between 1 and %d", c.Gateways, MaxGateways)
	case c.Gateway < 0 || c.Gateway >= MaxGateways:
		// A fleet with membership keeps a gateway's index while others
		// leave, so an index may pass K-1; a fixed fleet checks [0, K).
		return fmt.Errorf("gateway index %d: must be in [0, %d)", c.Gateway, MaxGateways)
	case c.Sync <= 0:
		return fmt.Errorf("sync interval %v: must be positive", c.Sync)
	}
	return nil
}

// Sync runs one whole sync of g at now, sync being the store's side of it
// (memstore.Key.SyncTo, say): g's push, the store's answer, g's pull.
func Sync(g Gateway, now int64, sync func(now int64, p *store.Push, pull *store.Pull)) {
	var push store.Push
	var pull store.Pull
	g.SyncPush(now, &push)
	sync(now, &push, &pull)
	g.SyncPull(now, &pull)
}

// Info describes a design the live limiter can enforce.
type Info struct {
	// Name is the design's name, e.g. "permit".
	Name string
	// Summary is its rule in one line.
	Summary string
	// Caveat, for a design the study shows to be dominated, is what it
	// measured against it, for a driver to warn of; "" for the others.
	Caveat string
	// Central is true for designs whose every decision is the store's
	// (central-log, central-counter): their syncs carry nothing but the
	// Fallback's admits, so a driver syncs a key only when it has some.
	Central bool
	// Leases is true for designs that hold granted slots (see Gateway.Held).
	Leases bool
	// Spare is true for designs that lend slots beyond L
	// (store.Push.Spare, permit): on Redis they need the exact log, and a
	// driver refuses them a window in buckets there.
	Spare bool
	// FixedWindow is true for designs that count in fixed windows only
	// (central-counter): a driver refuses them a sliding window.
	FixedWindow bool
	// CheckOnly is true for designs whose Decide accepts a cost of 0: a
	// check that counts nothing and answers whether the key is over its
	// limit (central-counter asks the store). For the others a driver
	// answers a check from View.
	CheckOnly bool
	// SharedIndex is true for designs whose every decision the store makes
	// (central-counter): replicas may share one gateway index, and need
	// not claim one.
	SharedIndex bool
	// FineBuckets is true for designs that size their local admits from
	// the room their view shows: a window in counters wider than Δ/2 makes
	// that room come in steps of a bucket for every gateway at once, and
	// lets floods through (docs/study.md, "Counter windows"); a driver
	// warns of such a window.
	FineBuckets bool
	// New builds the design for one gateway from a valid Config.
	New func(Config) Gateway
}

// registry holds the designs by name; it is filled by this package's init
// functions only, and read-only after.
var registry = map[string]Info{}

func register(i Info) { registry[i.Name] = i }

// Lookup returns the design named name.
func Lookup(name string) (Info, error) {
	i, ok := registry[name]
	if !ok {
		return Info{}, fmt.Errorf("unknown design %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return i, nil
}

// Names returns the designs' names: Default first, then alphabetically.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if (names[a] == Default) != (names[b] == Default) {
			return names[a] == Default
		}
		return names[a] < names[b]
	})
	return names
}

// Sliding returns the designs that count in a sliding window (every one
// but the fixed-window ones), in Names' order.
func Sliding() []string {
	var out []string
	for _, n := range Names() {
		if !registry[n].FixedWindow {
			out = append(out, n)
		}
	}
	return out
}

// New builds the named design for one gateway.
func New(name string, c Config) (Gateway, error) {
	i, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return i.New(c), nil
}

// Forgetful is implemented by designs that tell, from the key's life in the
// store's answers (store.Pull.Gen), that the store lost the key less than a
// window after it last answered, and then push their own admits of the
// window again (with Config.Mend): a driver reads it to log and count.
type Forgetful interface {
	// Forgotten returns how many times the store was found to have
	// forgotten the key.
	Forgotten() int
}

// Forgotten counts the store's losses of the key (Forgetful).
func (s *split) Forgotten() int { return s.local.forgot }

// Forgotten counts the store's losses of the key (Forgetful).
func (c *counter) Forgotten() int { return c.local.forgot }

// Forgotten counts the store's losses of the key (Forgetful).
func (h *headroom) Forgotten() int { return h.local.forgot }

// Forgotten counts the store's losses of the key (Forgetful).

// Forgotten counts the store's losses of the key (Forgetful).
func (c *centralLog) Forgotten() int { return c.local.forgot }

// Primer is implemented by designs whose rule counts this gateway's own
// admits in the window from their own record (split): a driver that makes
// a key's state anew (after an eviction) and syncs it before its first
// decision tells it how many of the window's admits are its own
// (store.Pull.Own), which it then counts as admitted at now, as long as
// they could count.
type Primer interface {
	Prime(now int64, own int)
}

// Prime counts own admits of an earlier life of the key (Primer).
func (s *split) Prime(now int64, own int) { s.local.restore(now, own) }

// Heir is a Gateway that can take over the local quota's history of an
// earlier Gateway of the same design for the same key, made under another
// fleet size or limit: a driver that makes a key anew hands it on, so that
// the local quota (split's rule, every design's fallback) keeps counting
// the admits the key's window still holds.
type Heir interface {
	// Inherit takes old's own admits that count at now; old is of the
	// same design, and its driver pushes what old had not pushed.
	Inherit(now int64, old Gateway)
}

// inherit is Heir.Inherit for a design whose record is the local one
// reached through rec.
func inherit[T Gateway](now int64, into *local, old Gateway, rec func(T) *local) {
	if o, ok := old.(T); ok {
		into.inherit(now, rec(o))
	}
}

// Inherit takes old's local history (Heir).
func (s *split) Inherit(now int64, old Gateway) {
	inherit(now, &s.local, old, func(o *split) *local { return &o.local })
}

// Inherit takes old's local history (Heir).
func (c *counter) Inherit(now int64, old Gateway) {
	inherit(now, &c.local, old, func(o *counter) *local { return &o.local })
}

// Inherit takes old's local history (Heir).
func (h *headroom) Inherit(now int64, old Gateway) {
	inherit(now, &h.local, old, func(o *headroom) *local { return &o.local })
}

// Inherit takes old's local history (Heir).
func (l *lease) Inherit(now int64, old Gateway) {
	inherit(now, &l.local, old, func(o *lease) *local { return &o.local })
}

// Inherit takes old's local history (Heir).
func (c *centralLog) Inherit(now int64, old Gateway) {
	inherit(now, &c.local, old, func(o *centralLog) *local { return &o.local })
}

// Inherit takes old's local history (Heir).
func (p *permit) Inherit(now int64, old Gateway) {
	inherit(now, &p.local, old, func(o *permit) *local { return &o.local })
}
