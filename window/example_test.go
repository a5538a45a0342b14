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
