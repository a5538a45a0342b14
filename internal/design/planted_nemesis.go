//go:build nemesisplant

package design

import "github.com/fleetlimit/fleetlimit/store"

// This file is built only with the nemesisplant tag, by the live nemesis's
// test of its own checker: a fleetlimit binary built so runs, beside the
// real designs, the default one with the bug the remembering fallback
// fixed, a fallback that starts from a fresh quota whatever count it
// heard. No other build holds it.

func init() {
	register(Info{
		Name:    "nemesis-planted-fresh-fallback",
		Summary: "the default design with a fallback from a fresh quota, ceil(L/K) a window (a planted bug)",
		Leases:  true,
		Spare:   true,
		New: func(c Config) Gateway {
			return &freshFallback{Gateway: NewPermit(c, PermitTolerance), quota: (c.Limit + c.Gateways - 1) / c.Gateways, w: int64(c.Window.Size)}
		},
	})
}

// freshFallback is the planted bug: what the real fallback refuses, it
// admits from a quota of its own, which no sync ever tells the store of.
type freshFallback struct {
	Gateway
	quota  int
	w      int64
	admits []int64
}

func (f *freshFallback) Fallback(now int64, n int) Verdict {
	if f.Gateway.Fallback(now, n) == Admit {
		return Admit
	}
	for len(f.admits) > 0 && f.admits[0] <= now-f.w {
		f.admits = f.admits[1:]
	}
	if len(f.admits)+n > f.quota {
		return Reject
	}
	for range n {
		f.admits = append(f.admits, now)
	}
	return Admit
}

func (f *freshFallback) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	if f.Gateway.Abandon(now, n, q, false) == Admit || !fallback {
		return Reject
	}
	return f.Fallback(now, n)
}
