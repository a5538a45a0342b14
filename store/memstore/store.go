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
	keys map[keyID]*Key
	ops  int
	// scratch for AskAll
	ks []*Key
	qs []store.Query
	as []store.Answer
}

// keyID names a key's limit in the store.
type keyID struct {
	name string
	part int
}

// New returns an empty Store.
func New() *Store { return &Store{keys: map[keyID]*Key{}} }

var _ store.Backend = (*Store)(nil)

func (s *Store) key(k store.Key) *Key {
	id := keyID{k.Name, k.Part}
	key := s.keys[id]
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
		s.keys[id] = key
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
	for id, k := range s.keys {
		if k.idle(now) {
			delete(s.keys, id)
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

var _ store.MultiAsker = (*Store)(nil)

// AskAll answers the queries of one decision on a key with several limits
// as one (store.MultiAsker), under the store's lock. It fails only for a
// central check withdrawn before it arrived.
func (s *Store) AskAll(ctx context.Context, now int64, gw int, items []store.AskItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ks, s.qs, s.as = s.ks[:0], s.qs[:0], s.as[:0]
	for i := range items {
		s.ks = append(s.ks, s.key(items[i].Key))
		s.qs = append(s.qs, items[i].Query)
		s.as = append(s.as, store.Answer{})
	}
	AnswerAll(s.ks, now, gw, s.qs, s.as)
	for i := range items {
		q := items[i].Query
		if c := q.Call; c != nil && q.Kind == store.QueryCentral && s.ks[i].Withdrawn(gw, c.Epoch, c.ID) {
			return ErrWithdrawn
		}
		items[i].Answer = s.as[i]
	}
	clear(s.ks)
	s.gc(now)
	return nil
}

// Stamps returns the timestamps of key inside the window at now, ascending.
func (s *Store) Stamps(name string, now int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[keyID{name, 0}]; k != nil {
		return k.Stamps(nil, now)
	}
	return nil
}

// Count returns the requests k's log counts in the window at now (0 for a
// key it does not hold).
func (s *Store) Count(k store.Key, now int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key := s.keys[keyID{k.Name, k.Part}]; key != nil {
		return key.Count(now)
	}
	return 0
}

// Len returns the number of keys held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
