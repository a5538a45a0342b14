// Package catalog is the lab's list of designs: fleetlimit's live designs
// (internal/design) with the simulator's hints for each, and the models of
// other systems' algorithms (Kong, Envoy's local rate limit,
// envoyproxy/ratelimit's local cache, gubernator, Doorman, Caddy's
// distributed mode) that the study runs beside them. The simulator, the
// study, replay and the explorer look designs up here; no production
// package may import it (internal/purity), so a peer's model can never be
// built into a live limiter.
package catalog

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// Info describes a design to the simulator.
type Info struct {
	Name    string // the design's name, e.g. "shared-counter"
	Summary string // its rule in one line
	// Leases, Spare, FixedWindow, CheckOnly, SharedIndex, FineBuckets: as
	// design.Info's.
	Leases, Spare, FixedWindow, CheckOnly, SharedIndex, FineBuckets bool
	// NoSync is true for designs whose syncs carry nothing but the
	// Fallback's admits (central-log; design.Info.Central): the simulator,
	// which has no fallback, neither runs nor counts their syncs, and a
	// run's figures must depend neither on the sync interval nor on the
	// gateway that decides (sim.Params.FleetFree).
	NoSync bool
	// BusySyncs is true for designs whose gateways sync every interval
	// while they hold or want anything (permit: for five windows after a
	// request), so that few of their syncs are quiet: the simulator then
	// performs every sync, as looking ahead for the quiet ones costs more
	// than leaving them out saves.
	BusySyncs bool
	// FreshQuiet is true for designs whose gateway, fresh from New and
	// reached by nothing, has no sync that changes anything (lazy
	// QuietSyncs is math.MaxInt): a replayed run in the lazy mode need not
	// build the gateways no request reaches (sim.RunDecisions).
	// TestFreshQuietHolds holds the hint to the designs.
	FreshQuiet bool
	// PushOnly is true for designs whose syncs only push their admits and
	// whose decisions never read a pull (split): a run's decisions must not
	// depend on the sync interval, only what the store holds does
	// (sim.Params.SyncBlind).
	PushOnly bool
	// LocalState is true for a design whose decisions depend on what the
	// deciding gateway has seen even though it never syncs (ratelimit-
	// cache's local cache of over-limit keys): its runs are not free of
	// the fleet (sim.Params.FleetFree) though it is NoSync.
	LocalState bool
	// RateLeases, for a design whose syncs ask for a rate and are granted
	// one (Doorman's), names the store's algorithm, RateProportional or
	// RateFair: its store must grant rates (memstore.Key.SetRateLeases),
	// which only the simulator's does. "" for the others.
	RateLeases string
	// Peer is true for another system's algorithm modelled as a design:
	// the study runs it in its peers part, beside its own, and the other
	// parts leave it out.
	Peer bool
	// New builds the design for one gateway from a valid design.Config.
	New func(design.Config) design.Gateway
}

// Doorman's algorithms for Info.RateLeases.
const (
	RateProportional = "proportional"
	RateFair         = "fair"
)

// StudyDesigns are the seven designs of the study, in its order.
var StudyDesigns = []string{"central-log", "split", "shared-counter", "extrapolate", "track-share", "lease", "lease-ask"}

// OwnDesigns are fleetlimit's designs beyond the study's, which take part in
// every part of the study beside them.
var OwnDesigns = []string{"headroom", "permit"}

// lab holds the models registered by this package's init functions and
// by Register.
var (
	labMu sync.RWMutex
	lab   = map[string]Info{}
)

func register(i Info) {
	labMu.Lock()
	defer labMu.Unlock()
	lab[i.Name] = i
}

// Register adds a design to the lab (a variant of one, such as
// design.NewHeadroom at another tolerance): the simulator, the study and
// advise then know it by name. It refuses an empty or taken name and a nil
// New. It is safe to call at any time, though a run looks a design up as
// it starts.
func Register(i Info) error {
	_, err := Lookup(i.Name)
	switch {
	case i.Name == "":
		return fmt.Errorf("catalog: register: empty name")
	case err == nil:
		return fmt.Errorf("catalog: register %q: the name is taken", i.Name)
	case i.New == nil:
		return fmt.Errorf("catalog: register %q: New is nil", i.Name)
	}
	labMu.Lock()
	defer labMu.Unlock()
	if _, taken := lab[i.Name]; taken {
		return fmt.Errorf("catalog: register %q: the name is taken", i.Name)
	}
	lab[i.Name] = i
	return nil
}

// live returns design's Info for name with the simulator's hints.
func live(d design.Info) Info {
	return Info{Name: d.Name, Summary: d.Summary, Leases: d.Leases, Spare: d.Spare, FixedWindow: d.FixedWindow,
		CheckOnly: d.CheckOnly, SharedIndex: d.SharedIndex, FineBuckets: d.FineBuckets, NoSync: d.Central,
		BusySyncs: d.Name == "permit", PushOnly: d.Name == "split", FreshQuiet: d.Name != "lease", New: d.New}
}

// Lookup returns the design registered under name: a live design or a
// peer's model.
func Lookup(name string) (Info, error) {
	labMu.RLock()
	i, ok := lab[name]
	labMu.RUnlock()
	if ok {
		return i, nil
	}
	if d, err := design.Lookup(name); err == nil {
		return live(d), nil
	}
	return Info{}, fmt.Errorf("unknown design %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Names returns every design's name in the study's order, then OwnDesigns,
// then the others alphabetically.
func Names() []string {
	order := map[string]int{}
	for i, n := range append(StudyDesigns[:len(StudyDesigns):len(StudyDesigns)], OwnDesigns...) {
		order[n] = i
	}
	names := design.Names()
	labMu.RLock()
	for n := range lab {
		names = append(names, n)
	}
	labMu.RUnlock()
	sort.Slice(names, func(a, b int) bool {
		oa, okA := order[names[a]]
		ob, okB := order[names[b]]
		switch {
		case okA && okB:
			return oa < ob
		case okA != okB:
			return okA
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
		if i, _ := Lookup(n); !i.FixedWindow {
			out = append(out, n)
		}
	}
	return out
}

// Peers returns the peers' models (Info.Peer), in Names' order.
func Peers() []string {
	var out []string
	for _, n := range Names() {
		if i, _ := Lookup(n); i.Peer {
			out = append(out, n)
		}
	}
	return out
}

// New builds the named design for one gateway: a peer's model, or else a
// live design (design.New).
func New(name string, c design.Config) (design.Gateway, error) {
	labMu.RLock()
	i, ok := lab[name]
	labMu.RUnlock()
	if !ok {
		return design.New(name, c)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return i.New(c), nil
}
