package limiter

import (
	"sync"

	"github.com/fleetlimit/fleetlimit/store"
)

// orphans are the last pushes of retired entries (evicted, or renewed under
// another limit or fleet), kept for the next sync, with an index by key so
// that a key made anew finds its old admits at once, however many keys
// were evicted since the last sync. It is safe for concurrent use, and its
// lock is never held while taking another.
type orphans struct {
	mu    sync.Mutex
	items []store.SyncItem
	byKey map[string][]int // key name -> indexes into items
}

// add keeps a retired entry's last push.
func (o *orphans) add(it store.SyncItem) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byKey == nil {
		o.byKey = map[string][]int{}
	}
	o.byKey[it.Key.Name] = append(o.byKey[it.Key.Name], len(o.items))
	o.items = append(o.items, it)
}

// of returns the last pushes kept for key name, in order.
func (o *orphans) of(name string) []store.SyncItem {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []store.SyncItem
	for _, i := range o.byKey[name] {
		out = append(out, o.items[i])
	}
	return out
}

// all returns every push kept, in order.
func (o *orphans) all() []store.SyncItem {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]store.SyncItem(nil), o.items...)
}

// drop forgets the first n pushes, which a sync has delivered.
func (o *orphans) drop(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.items = append(o.items[:0], o.items[n:]...)
	clear(o.byKey)
	for i, it := range o.items {
		o.byKey[it.Key.Name] = append(o.byKey[it.Key.Name], i)
	}
}
