package catalog

import (
	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

func init() {
	register(Info{
		Name:        "ratelimit-cache",
		Summary:     "envoyproxy/ratelimit with its local cache: central-counter, and a key found over its limit is refused locally until its window ends",
		NoSync:      true,
		FixedWindow: true,
		CheckOnly:   true,
		SharedIndex: true,
		LocalState:  true,
		Peer:        true,
		New: func(c design.Config) design.Gateway {
			return &ratelimitCache{CentralCounter: design.NewCentralCounter(c), spec: window.Spec{Size: c.Window.Size, Kind: window.Fixed}}
		},
	})
}

// ratelimitCache is envoyproxy/ratelimit with LOCAL_CACHE_SIZE_IN_BYTES
// set: its algorithm (central-counter: every request adds to the store's
// counter of the fixed window), and a local cache of the counter keys found
// over the limit (src/limiter/base_limiter.go: an over-limit key is set in
// the cache "to be the entire duration" of its unit, and a request whose key
// is in the cache is answered OVER_LIMIT without asking Redis, or counting;
// since a key names its window, a new window's key is not in it). So a key
// that goes over in a window asks the store no more until that window ends.
// The cache's size bound is left out: every over-limit key stays cached.
type ratelimitCache struct {
	*design.CentralCounter
	spec      window.Spec // the counter's: fixed windows of W
	overUntil int64       // the end of the window the store last said was over
}

// Decide refuses a key in the cache locally; otherwise asks the counter.
func (c *ratelimitCache) Decide(now int64, n int) (design.Verdict, store.Query) {
	if now < c.overUntil {
		return design.Reject, store.Query{}
	}
	return c.CentralCounter.Decide(now, n)
}

// Resume caches a key the counter says is over until its window's end.
func (c *ratelimitCache) Resume(now int64, n int, q store.Query, a store.Answer) design.Verdict {
	v := c.CentralCounter.Resume(now, n, q, a)
	if v == design.Reject {
		c.overUntil = c.spec.Lo(now) + int64(c.spec.Size)
	}
	return v
}

// View says nothing is left while the key is cached.
func (c *ratelimitCache) View(now int64, fallback bool) (int, int64) {
	if !fallback && now < c.overUntil {
		return 0, c.overUntil
	}
	return c.CentralCounter.View(now, fallback)
}
