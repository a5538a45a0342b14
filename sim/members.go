package sim

import (
	"slices"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// membership sets the fleet of the start live, draws each gateway's
// heartbeat phase and schedules the fleet's changes (Faults.Members).
func (e *engine) membership() {
	p := e.r.p
	e.live = p.Gateways
	for g := range p.Gateways {
		e.gs[g].alive, e.gs[g].k = true, p.Gateways
	}
	if len(e.f.Members) == 0 {
		return
	}
	beat := int64(e.f.memberTTL() / 3)
	brng := rngFor(p.Seed, streamBeats)
	for g := range e.gs {
		e.gs[g].beat = brng.Int64N(beat)
	}
	for _, c := range e.f.Members {
		e.schedule(event{t: int64(c.At), kind: evMembers, k: c.Gateways})
	}
}

// nextBeat is gateway g's first heartbeat at or after t.
func (e *engine) nextBeat(g int, t int64) int64 {
	beat, ph := int64(e.f.memberTTL()/3), e.gs[g].beat
	if t <= ph {
		return ph
	}
	return ph + (t-ph+beat-1)/beat*beat
}

// lastBeat is gateway g's last heartbeat at or before t.
func (e *engine) lastBeat(g int, t int64) int64 {
	beat, ph := int64(e.f.memberTTL()/3), e.gs[g].beat
	if t < ph {
		return ph - beat
	}
	return ph + (t-ph)/beat*beat
}

// resize makes the fleet k gateways at t: the highest indexes crash, or
// newcomers join at the lowest free ones; traffic follows at once, and the
// others learn at their heartbeats.
func (e *engine) resize(t int64, k int) {
	old := e.live
	if k == old {
		return
	}
	var gone []int
	lapse := t // when the last departed member's registration lapses
	for g := k; g < old; g++ {
		e.die(t, g)
		gone = append(gone, g)
		lapse = max(lapse, e.lastBeat(g, t)+int64(e.f.memberTTL()))
	}
	for g := old; g < k; g++ {
		e.join(t, g, k)
	}
	e.live = k
	e.r.src.setLive(k)
	for g := range min(old, k) {
		s := &e.gs[g]
		known := slices.DeleteFunc(slices.Clone(s.gone), func(d int) bool { return d < k })
		known = append(known, gone...)
		slices.Sort(known)
		e.schedule(event{t: e.nextBeat(g, lapse), kind: evLearn, g: g, life: s.life, k: k, gone: slices.Compact(known)})
	}
}

// die is gateway g crashing at t: what waits there is rejected, what it has
// not pushed is lost, its lease slots stay counted at the store.
func (e *engine) die(t int64, g int) {
	r, s := e.r, &e.gs[g]
	e.dropQueue(t, g)
	if r.info.Leases {
		r.m.held(t, -r.gws[g].Held())
	}
	s.alive = false
	s.life++
	s.waiting, s.syncing = false, false
}

// join is a newcomer at index g at t, in a fleet of k it knows at once.
func (e *engine) join(t int64, g, k int) {
	s := &e.gs[g]
	s.alive = true
	s.life++
	s.k, s.gone, s.remakes = k, nil, 0
	s.waiting, s.syncing = false, false
	cfg := e.r.gatewayConfig(g)
	cfg.Gateways, cfg.Epoch = k, s.epoch()
	e.r.gws[g] = e.r.info.New(cfg)
}

// learn is gateway g's heartbeat telling it the fleet's size: it makes its
// design anew under the new K (inheriting the local quota's history),
// pushes what the old one had not, and syncs at once. A gateway waiting on
// the store learns when it is done.
func (e *engine) learn(ev event) {
	r, s, g := e.r, &e.gs[ev.g], ev.g
	if !s.alive || ev.life != s.life {
		return
	}
	if s.waiting || s.syncing {
		ev.t += int64(r.p.Sync) / 10
		e.schedule(ev)
		return
	}
	s.gone = ev.gone
	if ev.k == s.k {
		return
	}
	now := e.clock(ev.t, g)
	old := r.gws[g]
	held := r.heldBefore(g)
	p := &r.push
	if old.SyncPush(now, p); len(p.Admits) > 0 || held > 0 {
		p.Gone = s.gone
		r.storeSync(now, *p)
	}
	s.remakes++
	s.k = ev.k
	cfg := r.gatewayConfig(g)
	cfg.Gateways, cfg.Epoch = s.k, s.epoch()
	nw := r.info.New(cfg)
	if h, ok := nw.(design.Heir); ok {
		h.Inherit(now, old)
	}
	r.gws[g] = nw
	r.heldAfter(ev.t, g, held)
	e.startSync(ev.t, g)
}
