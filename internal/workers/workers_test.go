package workers

import (
	"sync/atomic"
	"testing"
)

// Every call is made once, each by a worker below k, and a worker's calls
// never overlap.
func TestPoolRunsEachCallOnce(t *testing.T) {
	for _, k := range []int{0, 1, 2, 7} {
		for _, n := range []int{0, 1, 5, 1000} {
			seen := make([]int32, n)
			busy := make([]atomic.Int32, max(k, 1))
			var bad atomic.Bool
			Pool(k)(n, func(w, i int) {
				if w < 0 || w >= max(k, 1) || busy[w].Add(1) != 1 {
					bad.Store(true)
				}
				seen[i]++
				busy[w].Add(-1)
			})
			if bad.Load() {
				t.Fatalf("k %d, n %d: a call on a worker out of range, or two at once on one", k, n)
			}
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("k %d, n %d: call %d made %d times", k, n, i, c)
				}
			}
		}
	}
}
