package catalog

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/window"
)

// The token bucket as Envoy documents it (api/envoy/type/v3/token_bucket.
// proto): max_tokens is "also the number of tokens that the bucket
// initially contains"; "during each fill interval tokens_per_fill are added
// to the bucket"; it "will never contain more than max_tokens tokens".
func TestEnvoyLocalTokenBucket(t *testing.T) {
	c := design.Config{Limit: 6, Window: window.Spec{Size: time.Second}, Gateways: 2, Gateway: 0, Sync: time.Second}
	e := newEnvoyLocal(c, false) // max_tokens = tokens_per_fill = 3, fill_interval = 1 s
	ms := int64(time.Millisecond)
	admits := func(at int64, n int) int {
		got := 0
		for range n {
			if v, _ := e.Decide(at, 1); v == design.Admit {
				got++
			}
		}
		return got
	}
	if got := admits(10*ms, 5); got != 3 {
		t.Fatalf("a full bucket of 3 admitted %d of 5", got)
	}
	if got := admits(990*ms, 1); got != 0 {
		t.Fatalf("before the fill: %d admitted", got)
	}
	if got := admits(1000*ms, 4); got != 3 {
		t.Fatalf("after one fill of 3: %d admitted, want 3", got)
	}
	if got := admits(5000*ms, 9); got != 3 { // four fills, but never more than max_tokens
		t.Fatalf("after four fills: %d admitted, want max_tokens 3", got)
	}
	s := newEnvoyLocal(c, true) // one token every W·K/L = 333 ms
	e = s
	if got := admits(0, 5); got != 3 {
		t.Fatalf("smooth: the first burst admitted %d, want 3", got)
	}
	if got := admits(340*ms, 3); got != 1 {
		t.Fatalf("smooth: one fill later %d admitted, want 1", got)
	}
}
