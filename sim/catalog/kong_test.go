package catalog

import (
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/design"

	"github.com/fleetlimit/fleetlimit/window"
)

// Kong's own example of its sliding window (developer.konghq.com, "Rate
// limiting window types": limit 10, window 60 s): "the client sends a burst
// of 12 requests per minute, 10 requests are accepted ... and two requests
// are rejected", then "it appears to the client that the window is never
// reset. The algorithm counts the response 429 and the API is blocked
// indefinitely", and "if the client reduces the number of requests, then
// you get the response 200 again".
func TestKongSlidingWindowAsKongSaysIt(t *testing.T) {
	c := design.Config{Limit: 10, Window: window.Spec{Size: time.Minute, Kind: window.Fixed}, Gateways: 1, Sync: time.Second}
	info, _ := Lookup("kong-local")
	g := info.New(c)
	sec := int64(time.Second)
	admitted := func(from, to, every int64) int {
		n := 0
		for at := from; at < to; at += every {
			if v, _ := g.Decide(at*sec, 1); v == design.Admit {
				n++
			}
		}
		return n
	}
	if got := admitted(0, 60, 5); got != 10 {
		t.Fatalf("the first minute of 12 requests: %d admitted, want 10", got)
	}
	if got := admitted(60, 300, 5); got != 0 {
		t.Fatalf("four more minutes at 12 a minute: %d admitted, want 0 (blocked indefinitely)", got)
	}
	if got := admitted(300, 600, 20); got == 0 {
		t.Fatal("at 3 a minute the client was still refused after five minutes")
	}
}
