package catalog

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// envoyproxy/ratelimit's own example of its local cache
// (src/limiter/base_limiter.go): "if we have an hour limit on all mongo
// connections ... we start to get ratelimited in the 50th minute, the ttl of
// local_cache will be set as 1 hour (0h50m-1h49m). In the time of 1h1m, since
// the cache key becomes different (mongo_2h), it won't get ratelimited."
func TestRatelimitCacheAsUpstreamSaysIt(t *testing.T) {
	spec := window.Spec{Size: time.Hour, Kind: window.Fixed}
	c := design.Config{Limit: 10, Window: spec, Gateways: 1, Sync: time.Second}
	info, _ := Lookup("ratelimit-cache")
	g := info.New(c)
	key := memstore.NewKey(c.Limit, spec)
	min := int64(time.Minute)
	asks := 0
	decide := func(at int64) design.Verdict {
		v, q := g.Decide(at, 1)
		if v == design.Ask {
			asks++
			v = g.Resume(at, 1, q, key.Answer(at, 0, q))
		}
		return v
	}
	for i := range 10 {
		if decide(int64(40+i)*min) != design.Admit {
			t.Fatalf("request %d of 10 refused", i+1)
		}
	}
	if decide(50*min) != design.Reject {
		t.Fatal("the 11th request in the hour was admitted")
	}
	before := asks
	for m := int64(51); m < 60; m++ {
		if decide(m*min) != design.Reject {
			t.Fatalf("minute %d: admitted in an hour already over", m)
		}
	}
	if asks != before {
		t.Errorf("the cached key asked the store %d times more; upstream answers it from the cache", asks-before)
	}
	if decide(61*min) != design.Admit || asks != before+1 {
		t.Errorf("at 1h01, in the next hour, the key was refused or answered without the store (%d asks)", asks-before)
	}
	if n := key.Counter(61*min, 0); n != 1 {
		t.Errorf("the second hour's counter holds %d, want 1: cached refusals count nothing", n)
	}
}
