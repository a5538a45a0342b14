package limiter

import (
	"sync"
	"sync/atomic"
	"time"
)

// coarseClock is the wall clock read by a ticker, never going backwards.
// Limiters of one process share one per resolution, so their decisions are
// on one clock.
type coarseClock struct {
	ns   atomic.Int64
	stop chan struct{}
	res  time.Duration
	refs int
}

var clocks struct {
	sync.Mutex
	m map[time.Duration]*coarseClock
}

// startClock returns the shared clock of that resolution, starting it.
func startClock(res time.Duration) *coarseClock {
	clocks.Lock()
	defer clocks.Unlock()
	if c := clocks.m[res]; c != nil {
		c.refs++
		return c
	}
	if clocks.m == nil {
		clocks.m = map[time.Duration]*coarseClock{}
	}
	c := &coarseClock{stop: make(chan struct{}), res: res, refs: 1}
	clocks.m[res] = c
	c.ns.Store(time.Now().UnixNano())
	go func() {
		t := time.NewTicker(res)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				if now := time.Now().UnixNano(); now > c.ns.Load() {
					c.ns.Store(now)
				}
			}
		}
	}()
	return c
}

func (c *coarseClock) now() int64 { return c.ns.Load() }

// release stops the clock when its last Limiter closes.
func (c *coarseClock) release() {
	clocks.Lock()
	defer clocks.Unlock()
	if c.refs--; c.refs == 0 {
		close(c.stop)
		delete(clocks.m, c.res)
	}
}
