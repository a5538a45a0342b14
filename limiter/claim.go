package limiter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
)

// claim takes this gateway's index on a shared store, waiting up to
// ClaimTTL for another holder's claim to expire, and starts renewing it.
// A store that is not shared (no store.Claimer) needs none.
func (l *Limiter) claim() error {
	if l.cfg.Instance == "" {
		host, _ := os.Hostname()
		l.cfg.Instance = fmt.Sprintf("%s:%d:%08x", host, os.Getpid(), rand.Uint32())
	}
	if l.cfg.Membership {
		return l.join()
	}
	c, ok := l.st.(store.Claimer)
	if !ok || l.info.SharedIndex {
		return nil
	}
	deadline := time.Now().Add(l.cfg.ClaimTTL)
	for said := false; ; said = true {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.SyncTimeout)
		holder, ok, err := c.Claim(ctx, l.cfg.Fleet, l.cfg.Gateway, l.cfg.Instance, l.cfg.ClaimTTL)
		cancel()
		if !ok && err == nil && !said {
			l.cfg.Logger.Warn("fleetlimit: this gateway's index is held by another process; waiting for its claim to lapse (a crashed holder's does) before starting",
				"gateway", l.cfg.Gateway, "fleet", l.cfg.Fleet, "holder", holder, "wait at most", l.cfg.ClaimTTL)
		}
		switch {
		case err != nil && timedOut(err) && time.Now().Before(deadline):
			// a slow store (a busy machine, a spike): try again until the
			// claim's deadline; one that refuses the call fails at once
			continue
		case err != nil:
			return fmt.Errorf("limiter: claiming gateway index %d on the store: %w", l.cfg.Gateway, err)
		case ok:
			l.claimStop, l.claimDone = make(chan struct{}), make(chan struct{})
			go l.renewClaim(c)
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("limiter: gateway index %d of %d of fleet %q is held by another live process (%s), which has renewed it for %v: "+
				"two processes with one index would each admit its share, and the fleet more than its limit; give each process its own index "+
				"(or, for another fleet on the same store, its own fleet name)",
				l.cfg.Gateway, l.cfg.Gateways, l.cfg.Fleet, holder, l.cfg.ClaimTTL)
		}
		time.Sleep(min(l.cfg.ClaimTTL/10, time.Second))
	}
}

// timedOut reports whether err is a store call that ran out of time, which
// a later call may not.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// renewClaim renews the claim every third of ClaimTTL until Close. A claim
// found held by another process (this one was cut off for longer than the
// TTL) is said once, counted in Stats.ClaimLost, and taken back when it
// is free again.
func (l *Limiter) renewClaim(c store.Claimer) {
	l.every(func(ctx context.Context) {
		holder, ok, err := c.Claim(ctx, l.cfg.Fleet, l.cfg.Gateway, l.cfg.Instance, l.cfg.ClaimTTL)
		if err != nil {
			return // the store is unreachable: the syncs say so
		}
		if lost := !ok; l.claimLost.Swap(lost) != lost && lost {
			l.cfg.Logger.Error("fleetlimit: another process holds this gateway's index; both admit its share until one stops",
				"gateway", l.cfg.Gateway, "holder", holder)
		}
	}, func(ctx context.Context) { c.Release(ctx, l.cfg.Fleet, l.cfg.Gateway, l.cfg.Instance) })
}

// every runs tick every third of ClaimTTL until Close, and then stop, each
// within SyncTimeout; it closes claimDone when done.
func (l *Limiter) every(tick, stop func(ctx context.Context)) {
	defer close(l.claimDone)
	call := func(f func(context.Context)) {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.SyncTimeout)
		defer cancel()
		f(ctx)
	}
	t := time.NewTicker(l.cfg.ClaimTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.claimStop:
			call(stop)
			return
		case <-t.C:
		}
		call(tick)
	}
}
