package design

import (
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:    "split",
		Summary: "no sharing: each gateway admits up to L/K per window on its own",
		New:     newSplit,
	})
}

// split admits while its own admits in the window are fewer than L/K,
// compared as real numbers: at most ceil(L/K) per window. Its syncs only
// push its admits, so the store's log stays the truth; it ignores the pull.
type split struct {
	cfg  Config
	log  *window.Log
	pend pending
}

func newSplit(c Config) Gateway {
	quota := (c.Limit + c.Gateways - 1) / c.Gateways // own < L/K  <=>  own+1 <= ceil(L/K)
	return &split{cfg: c, log: window.New(c.Window, quota)}
}

func (s *split) Decide(now int64, n int) (Decision, Query) {
	if s.log.Allow(now, n) {
		s.pend.add(now, n)
		return Admit, Query{}
	}
	return Reject, Query{}
}

func (s *split) Resume(now int64, n int, q Query, a Answer) Decision { return Reject }

func (s *split) SyncPush(now int64) store.Push {
	admits, seq := s.pend.push()
	return store.Push{Gateway: s.cfg.Gateway, Admits: admits, Seq: seq}
}

func (s *split) SyncPull(now int64, p store.Pull) { s.pend.settle() }
func (s *split) Held() int                        { return 0 }

// QuietSyncs: split's syncs only push its admits.
func (s *split) QuietSyncs() int { return s.pend.quietSyncs() }

// Skip does nothing: split keeps no sync state.
func (s *split) Skip(n int) {}

// PullsView is false: split ignores what it pulls.
func (s *split) PullsView() bool { return false }

// Record counts n admits the driver made on its own.
func (s *split) Record(now int64, n int) {
	s.log.Allow(now, n)
	s.pend.add(now, n)
}

// View returns what is left of this gateway's quota and when its oldest
// admit leaves the window.
func (s *split) View(now int64) (int, int64) {
	used := s.log.Count(now)
	if oldest, ok := s.log.Oldest(); ok {
		return s.log.Limit() - used, s.cfg.Window.Reset(now, oldest)
	}
	return s.log.Limit(), now
}
