package study

import (
	"fmt"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
	"github.com/fleetlimit/fleetlimit/window"
)

// PartPeers runs the peers' algorithms (catalog.Info.Peer, and caddy-
// distributed) beside three of the study's designs and headroom, under the
// study's floods and honest traffic (K = 8): each at its default settings
// and at the settings that match the study's Δ = 1 s.
const PartPeers = "peers"

// Peer is one configuration of the peers part: a design, its Δ and window
// kind, and what the setting is.
type Peer struct {
	Design  string
	Sync    time.Duration
	Kind    window.Kind
	Setting string
}

// PeerConfigs are the peers part's configurations, in the report's order.
var PeerConfigs = []Peer{
	{"envoy-local", refSync, window.Sliding, "a bucket of ⌈L/K⌉ filled whole every W (Envoy has no default)"},
	{"envoy-local-smooth", refSync, window.Sliding, "a bucket of ⌈L/K⌉, one token every W·K/L"},
	{"ratelimit-cache", refSync, window.Fixed, "LOCAL_CACHE_SIZE_IN_BYTES set (fixed windows, as upstream)"},
	{"central-counter", refSync, window.Fixed, "envoyproxy/ratelimit without its cache"},
	{"caddy-distributed", 5 * time.Second, window.Sliding, "default read_interval and write_interval: 5 s"},
	{"caddy-distributed", refSync, window.Sliding, "intervals of 1 s, the study's Δ"},
	{"kong-local", refSync, window.Fixed, "the plugin's default strategy, local (sync_rate -1): each node holds L"},
	{"kong-sync", refSync, window.Fixed, "sync_rate 1 s, the study's Δ, on a shared store"},
	{"kong-sync0", refSync, window.Fixed, "sync_rate 0: every request counted at the store"},
	{"gubernator-global", 10 * time.Millisecond, window.Fixed, "GlobalSyncWait 10 ms (its default is 500 µs, below the simulator's least Δ of 1 ms)"},
	{"gubernator-global", refSync, window.Fixed, "GlobalSyncWait 1 s, the study's Δ"},
	{"doorman", 5 * time.Second, window.Sliding, "ProportionalShare, refresh interval 5 s (Doorman's typical)"},
	{"doorman", refSync, window.Sliding, "ProportionalShare, refresh interval 1 s, the study's Δ"},
	{"doorman-fair", 5 * time.Second, window.Sliding, "FairShare, refresh interval 5 s"},
	{"central-log", refSync, window.Sliding, "the study's exact design"},
	{"shared-counter", refSync, window.Sliding, "the study's"},
	{"headroom", refSync, window.Sliding, "fleetlimit's own"},
}

// The peers part's traffics.
var (
	PeerFloods = []float64{1.5, 10, 100, 1000}
	PeerHonest = []string{"steady:0.8", "pageload:0.8"}
)

const (
	peerSeeds   = 3
	peerHonestT = 120 * time.Minute
)

// peerRuns returns the peers part's runs.
func peerRuns() []Run {
	var runs []Run
	for _, pc := range PeerConfigs {
		add := func(tr sim.Traffic, routing sim.Routing, length time.Duration) {
			for s := uint64(1); s <= peerSeeds; s++ {
				p := base(pc.Design, refK, pc.Sync, s)
				p.Traffic, p.Routing, p.Duration, p.WindowKind = tr, routing, length, pc.Kind
				runs = append(runs, Run{PartPeers, p})
			}
		}
		for _, m := range PeerFloods {
			add(sim.Traffic{Kind: sim.Flood, Factor: m}, sim.Even, FloodDuration(m))
		}
		for _, tr := range PeerHonest {
			add(traffic(tr), sim.Uneven, peerHonestT)
		}
	}
	return runs
}

// peerCell is a scenario of the peers part.
func peerCell(pc Peer, tr string, routing sim.Routing) Cell {
	return Cell{PartPeers, pc.Design, refK, pc.Sync, quietLimit, refWindow, pc.Kind, 0, tr, routing, ""}
}

// peerName names a configuration in the tables.
func peerName(pc Peer) string {
	name := pc.Design
	switch pc.Design {
	case "caddy-distributed", "gubernator-global", "doorman", "doorman-fair":
		name += " Δ = " + pc.Sync.String()
	}
	if pc.Kind == window.Fixed {
		name += " (fixed)"
	}
	return name
}

// peers writes the peers part: every configuration under the floods, then
// under honest traffic, and what the tables show.
func (s section) peers() {
	if !s.has(PartPeers) {
		return
	}
	fmt.Fprintf(s.b, "\n## The peers' algorithms beside the study's\n\n")
	fmt.Fprintf(s.b, "What other systems run (docs/design.md, \"The peers' algorithms\"), each at its default settings and at the settings "+
		"that match the study's Δ, beside three of the study's designs and headroom: K = %d, L = %d per %v, %d seeds. "+
		"The settings:\n\n", refK, quietLimit, refWindow, peerSeeds)
	for _, pc := range PeerConfigs {
		fmt.Fprintf(s.b, "- %s: %s\n", peerName(pc), pc.Setting)
	}
	fmt.Fprintf(s.b, "\n### Floods, even routing: worst_window_x [admitted_x] round_trip_pct\n\n")
	var head []string
	for _, m := range PeerFloods {
		head = append(head, floodSpec(m))
	}
	var tbl [][]string
	for _, pc := range PeerConfigs {
		row := []string{peerName(pc)}
		for _, m := range PeerFloods {
			row = append(row, s.t.fmt(peerCell(pc, floodSpec(m), sim.Even), func(m Mean) string {
				return fmt.Sprintf("%.3f [%.3f] %.2f%%", m.WorstWindowX, m.AdmittedX, m.RoundTripPct)
			}))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"configuration"}, head...), tbl)
	fmt.Fprintf(s.b, "\n### Honest clients, uneven routing: rejected_pct / round_trip_pct\n\n")
	tbl = nil
	for _, pc := range PeerConfigs {
		row := []string{peerName(pc)}
		for _, tr := range PeerHonest {
			row = append(row, s.t.fmt(peerCell(pc, tr, sim.Uneven), func(m Mean) string {
				return fmt.Sprintf("%.3f / %.2f", m.RejectedPct, m.RoundTripPct)
			}))
		}
		tbl = append(tbl, row)
	}
	writeTable(s.b, append([]string{"configuration"}, PeerHonest...), tbl)
	s.b.WriteString("\n" + s.peersFinding() + "\n\n")
}

// peersFinding says what the tables show: each configuration's worst
// window under the heaviest flood and its honest rejections against the
// exact design's.
func (s section) peersFinding() string {
	heavy := floodSpec(PeerFloods[len(PeerFloods)-1])
	var exact Mean
	ok := false
	for _, pc := range PeerConfigs {
		if pc.Design == "central-log" {
			exact, ok = s.t[peerCell(pc, PeerHonest[0], sim.Uneven)]
		}
	}
	if !ok {
		return ""
	}
	var parts []string
	for _, pc := range PeerConfigs {
		f, ok1 := s.t[peerCell(pc, heavy, sim.Even)]
		h, ok2 := s.t[peerCell(pc, PeerHonest[0], sim.Uneven)]
		if !ok1 || !ok2 || pc.Design == "central-log" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.3f × L and %.3f%% (%+.3f points)", peerName(pc), f.WorstWindowX, h.RejectedPct, h.RejectedPct-exact.RejectedPct))
	}
	return fmt.Sprintf("What the tables show, as the worst window under %s and the honest rejections under %s against the exact "+
		"design's %.3f%%: %s.", heavy, PeerHonest[0], exact.RejectedPct, strings.Join(parts, "; "))
}
