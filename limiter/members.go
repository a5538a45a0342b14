package limiter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
)

// Fleet is what this gateway knows of its fleet: K and its own index, and
// with membership the live members' indexes.
type Fleet struct {
	Gateways int   // K
	Gateway  int   // this gateway's index
	Live     []int // the live members' indexes, ascending (with membership)
	// Changes counts the changes of K or of the index seen since start.
	Changes int64
}

// fleet is the fleet the limiter decides with; keys made under another are
// made anew at their next request.
type fleet struct {
	k, index int
	live     []int
	// gone are the members this gateway has seen that are no longer
	// live: its syncs settle their lease slots (store.Push.Gone)
	gone []int
}

// Fleet returns the fleet this gateway decides with now.
func (l *Limiter) Fleet() Fleet {
	f := l.fleet.Load()
	return Fleet{Gateways: f.k, Gateway: f.index, Live: slices.Clone(f.live), Changes: l.fleetChanges.Load()}
}

// join makes this gateway a member of its fleet on the store and starts
// the heartbeat. Without Config.Membership the fleet is the configured one.
func (l *Limiter) join() error {
	if !l.cfg.Membership {
		l.fleet.Store(&fleet{k: l.cfg.Gateways, index: l.cfg.Gateway})
		return nil
	}
	m, ok := l.st.(store.Membership)
	if !ok {
		return errors.New("limiter: membership needs a store shared by the fleet that keeps it (Redis); the embedded store serves one process")
	}
	l.seen = map[int]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), max(l.cfg.SyncTimeout, time.Second))
	f, err := l.heartbeat(ctx, m)
	cancel()
	if err != nil {
		return fmt.Errorf("limiter: joining fleet %q on the store: %w", l.cfg.Fleet, err)
	}
	l.fleet.Store(f)
	l.cfg.Logger.Info("fleetlimit: joined the fleet", "fleet", l.cfg.Fleet, "gateway", f.index, "gateways", f.k, "live", f.live)
	l.claimStop, l.claimDone = make(chan struct{}), make(chan struct{})
	go l.beat(m)
	return nil
}

func (l *Limiter) heartbeat(ctx context.Context, m store.Membership) (*fleet, error) {
	index, live, err := m.Heartbeat(ctx, l.cfg.Fleet, l.cfg.Instance, l.cfg.ClaimTTL)
	if err != nil {
		return nil, err
	}
	if len(live) > design.MaxGateways || index >= design.MaxGateways {
		return nil, fmt.Errorf("the fleet has %d live members (index %d), more than %d", len(live), index, design.MaxGateways)
	}
	for _, i := range live {
		l.seen[i] = true
	}
	var gone []int
	for i := range l.seen {
		if !slices.Contains(live, i) {
			gone = append(gone, i)
		}
	}
	slices.Sort(gone)
	return &fleet{k: len(live), index: index, live: live, gone: gone}, nil
}

// beat renews the membership every third of ClaimTTL until Close, and
// takes every change of the fleet: a gateway that joined, left or stopped
// renewing changes K, and the keys are made anew under the new K at their
// next request (their unsynced admits pushed first).
func (l *Limiter) beat(m store.Membership) {
	l.every(func(ctx context.Context) {
		if f, err := l.heartbeat(ctx, m); err == nil { // else the store is unreachable: the syncs say so
			l.takeFleet(f)
		}
	}, func(ctx context.Context) { m.Leave(ctx, l.cfg.Fleet, l.cfg.Instance) })
}

// takeFleet makes f the fleet this gateway decides with, saying what changed.
func (l *Limiter) takeFleet(f *fleet) {
	old := l.fleet.Load()
	if f.k == old.k && f.index == old.index && slices.Equal(f.live, old.live) && slices.Equal(f.gone, old.gone) {
		return
	}
	l.fleet.Store(f)
	if f.k != old.k || f.index != old.index {
		l.fleetChanges.Add(1)
	}
	l.cfg.Logger.Info("fleetlimit: the fleet changed", "fleet", l.cfg.Fleet, "gateways", f.k, "was", old.k,
		"gateway", f.index, "live", f.live)
	if f.index != old.index {
		l.cfg.Logger.Error("fleetlimit: this gateway's membership lapsed and it took a new index; admits it had not pushed under the old one may be lost",
			"gateway", f.index, "was", old.index)
	}
}
