package window_test

import (
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/window"
)

func ExampleLog() {
	l := window.New(window.Spec{Size: time.Second, Kind: window.Sliding}, 2)
	ms := int64(time.Millisecond)
	for _, t := range []int64{0, 400, 800, 1000, 1300} {
		fmt.Printf("%4dms %v\n", t, l.Allow(t*ms, 1))
	}
	// Output:
	//    0ms true
	//  400ms true
	//  800ms false
	// 1000ms true
	// 1300ms false
}

// A minute in 60 counters: an admit counts as the last instant of its
// one-second bucket, so it leaves the window up to a second later than in
// the exact log, and a key holds at most 61 buckets whatever its limit.
func ExampleSpec_Stamp() {
	exact := window.Spec{Size: time.Minute}
	counters := window.Spec{Size: time.Minute, Buckets: 60}
	at := int64(90*time.Second + 250*time.Millisecond)
	fmt.Println(time.Duration(exact.Stamp(at)), time.Duration(counters.Stamp(at)), counters)
	// Output: 1m30.25s 1m30.999999999s sliding/60
}
