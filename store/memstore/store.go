package memstore

import (
	"context"
	"errors"
	"sync"

	"github.com/fleetlimit/fleetlimit/store"
)

// Store is the embedded store for many keys, safe for concurrent use: the
// live limiter's default backend. Keys are created on first use and dropped
// once nothing of theirs is left in the window.
type Store struct {
	mu   sync.Mutex
	keys map[string]*Key
	ops  int
}

// New returns an empty Store.
func New() *Store { return &Store{keys: map[string]*Key{}} }

var _ store.Backend = (*Store)(nil)

func (s *Store) key(k store.Key) *Key {
	key := s.keys[k.Name]
	if key == nil || key.limit != k.Limit || key.spec != k.Window {
		// A new key, or its limit changed: start it afresh, keeping
		// what it had admitted.
		nk := NewKey(k.Limit, k.Window)
		if key != nil {
			nk.log.appendFrom(&key.log, key.head, key.log.len())
			nk.own, nk.out, nk.applied, nk.epoch, nk.outTotal, nk.now = key.own, key.out, key.applied, key.epoch, key.outTotal, key.now
			nk.count, nk.heavy, nk.ctrStart, nk.ctr = key.count, key.heavy, key.ctrStart, key.ctr
			nk.lastCentral, nk.barred, nk.gen = key.lastCentral, key.barred, key.gen
		}
		key = nk
		s.keys[k.Name] = key
	}
	return key
}

// gc drops keys with nothing in the window and no outstanding slots, every
// so many operations, so memory follows the keys in use.
func (s *Store) gc(now int64) {
	if s.ops++; s.ops < 4096 {
		return
	}
	s.ops = 0
	for name, k := range s.keys {
		if k.idle(now) {
			delete(s.keys, name)
		}
	}
}

// Sync applies a batch of pushes and fills their pulls. It never fails.
func (s *Store) Sync(ctx context.Context, now int64, items []store.SyncItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range items {
		it := &items[i]
		p := s.key(it.Key).Sync(now, it.Push)
		p.Expiring = append([]int64(nil), p.Expiring...)
		if p.ExpiringCounts != nil {
			p.ExpiringCounts = append([]int(nil), p.ExpiringCounts...)
		}
		it.Pull = p
	}
	s.gc(now)
	return nil
}

// ErrWithdrawn is Ask's answer to a central check that its gateway had
// withdrawn (store.Repair.Withdraw) before it arrived: it changed nothing.
var ErrWithdrawn = errors.New("memstore: the central check was withdrawn before it arrived and changed nothing")

// Ask answers a query for one key. It fails only for a query withdrawn
// before it arrived.
func (s *Store) Ask(ctx context.Context, now int64, k store.Key, gw int, q store.Query) (store.Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(k)
	a := key.Answer(now, gw, q)
	if c := q.Call; c != nil && q.Kind == store.QueryCentral && key.Withdrawn(gw, c.Epoch, c.ID) {
		return store.Answer{}, ErrWithdrawn
	}
	s.gc(now)
	return a, nil
}

// Stamps returns the timestamps of key inside the window at now, ascending.
func (s *Store) Stamps(name string, now int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[name]; k != nil {
		return k.Stamps(nil, now)
	}
	return nil
}

// Len returns the number of keys held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
