package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// Close while requests are still being decided (a server reloading its
// configuration closes the old limiter while the old handler's last
// requests run) loses no admit: every request told "allowed" is in the
// store after Close, and a request that comes once Close has begun gets
// ErrClosed and is counted nowhere.
func TestCloseUnderLoadLosesNoAdmit(t *testing.T) {
	ctx := context.Background()
	for _, dsg := range Designs() {
		t.Run(dsg, func(t *testing.T) {
			st := memstore.New()
			cfg := Config{Design: dsg, Limit: 1_000_000, Window: time.Hour, Sync: 50 * time.Millisecond,
				Gateways: 2, Gateway: 0, Store: st, Logger: quietLog}
			if dsg == "central-counter" {
				cfg.WindowKind = window.Fixed
			}
			l, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const workers, keys = 4, 8
			allowed := make([][keys]int, workers)
			var closedSeen sync.WaitGroup
			var wg sync.WaitGroup
			started := make(chan struct{}, workers)
			var admits atomic.Int64
			for w := range workers {
				closedSeen.Add(1)
				wg.Go(func() {
					first := true
					for i := 0; i < 2_000_000; i++ {
						k := (w + i) % keys
						d, err := l.Allow(ctx, fmt.Sprint("k", k))
						if errors.Is(err, ErrClosed) {
							closedSeen.Done()
							return
						}
						if err != nil {
							t.Errorf("Allow: %v", err)
							closedSeen.Done()
							return
						}
						if d.Allowed {
							allowed[w][k]++
							admits.Add(1)
						}
						if first {
							started <- struct{}{}
							first = false
						}
					}
					t.Errorf("worker %d never saw ErrClosed", w)
					closedSeen.Done()
				})
			}
			for range workers {
				<-started
			}
			// load until something is admitted (lease admits only in the
			// slots its first sync brings), and a little longer
			for i := 0; i < 500 && admits.Load() == 0; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			now := l.Now().UnixNano()
			total := 0
			for k := range keys {
				if dsg == "central-counter" { // counts at the store on every request, in a counter, not a log
					break
				}
				told := 0
				for w := range workers {
					told += allowed[w][k]
				}
				total += told
				if held := st.Count(store.Key{Name: fmt.Sprint("k", k)}, now); held != told {
					t.Errorf("key k%d: the store holds %d admits, clients were told of %d", k, held, told)
				}
			}
			if total == 0 && dsg != "central-counter" {
				t.Fatal("nothing was admitted: the test tested nothing")
			}
			if _, err := l.Allow(ctx, "k0"); !errors.Is(err, ErrClosed) {
				t.Errorf("Allow after Close: error %v, want ErrClosed", err)
			}
		})
	}
}
