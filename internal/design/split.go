package design

import "github.com/fleetlimit/fleetlimit/store"

func init() {
	register(Info{
		Name:    "split",
		Summary: "no sharing: each gateway admits up to L/K per window on its own",
		New:     func(c Config) Gateway { return &split{gw: c.Gateway, local: newLocal(c)} },
	})
}

// split is the local quota alone: it admits while its own admits in the
// window are fewer than L/K, compared as real numbers, so at most ceil(L/K)
// per window. Its syncs only push its admits, so the store's log stays the
// truth; it ignores the pull but for the key's life (a store that lost the
// key gets its admits again). Its fallback is its rule.
type split struct {
	gw    int
	local local
}

func (s *split) Decide(now int64, n int) (Verdict, store.Query) {
	return s.Fallback(now, n), store.Query{}
}

func (s *split) Resume(now int64, n int, q store.Query, a store.Answer) Verdict { return Reject }

// Unadmit forgets a local admit.
func (s *split) Unadmit(now int64, n int, q store.Query) { s.local.unadmit(now, n, q) }

func (s *split) Fallback(now int64, n int) Verdict {
	return s.local.allow(now, n)
}

// RefusesUntil: a rejection changes nothing, and the quota frees up when
// the oldest own admit that counts leaves the window.
func (s *split) RefusesUntil(now int64) int64 { return s.local.refusesUntil(now) }

// Refused does nothing: a rejection changes nothing.
func (s *split) Refused(n int) {}

// CountsRefusals is false: a rejection changes nothing.
func (s *split) CountsRefusals() bool { return false }

// Abandon: split never asks the store.
func (s *split) Abandon(now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(s, &s.local, now, n, q, fallback)
}

func (s *split) SyncPush(now int64, p *store.Push) {
	*p = store.Push{Gateway: s.gw}
	s.local.push(p)
}

func (s *split) SyncPull(now int64, p *store.Pull) {
	s.local.pulled(now, p)
	s.local.settle()
}
func (s *split) Held() int { return 0 }

// QuietSyncs: split's syncs only push its admits.
func (s *split) QuietSyncs() int { return s.local.quietSyncs() }

// Skip does nothing: split keeps no sync state.
func (s *split) Skip(n int) {}

// PullsView is false: split ignores what it pulls.
func (s *split) PullsView() bool { return false }

// View returns what is left of this gateway's quota and when its oldest
// admit leaves the window; its rule and its fallback are one.
func (s *split) View(now int64, fallback bool) (int, int64) {
	return s.local.quotaView(now)
}
