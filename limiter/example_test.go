package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// One gateway on the embedded store: 2 requests a minute per key.
func ExampleLimiter_Allow() {
	l, err := limiter.New(limiter.Config{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for i := 0; i < 3; i++ {
		d, err := l.Allow(context.Background(), "alice")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}

// A burst limit beside a daily one: a request the burst limit refuses
// spends nothing of the day's, and the decision names the limit that binds.
func ExampleLimiter_AllowLimits() {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	// central-log, exact: the default (permit) may refuse a limit that
	// another limit's refusal left with room until its next sync.
	l, err := limiter.New(limiter.Config{Design: "central-log", Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	lims := []limiter.Limit{{Requests: 2, Window: time.Second}, {Requests: 3, Window: 24 * time.Hour}}
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if i == 3 {
			now = now.Add(2 * time.Second)
		}
		d, _ := l.AllowLimits(ctx, "acct", lims, 1)
		fmt.Printf("%v: %d per %v, %d left\n", d.Allowed, d.Limit, d.Window, d.Remaining)
	}
	// Output:
	// true: 2 per 1s, 1 left
	// true: 2 per 1s, 0 left
	// false: 2 per 1s, 0 left
	// true: 3 per 24h0m0s, 0 left
	// false: 3 per 24h0m0s, 0 left
}

// Four gateways of one fleet on Redis, each a process like this one with
// its own index: the default design, permit, holds every window within
// L + ⌊0.1 L⌋ however many there are.
func Example_redis() {
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	l, err := limiter.New(limiter.Config{Limit: 100, Window: time.Minute, Gateways: 4, Gateway: 0, Store: st})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	d, err := l.Allow(ctx, "alice") // d.Allowed, d.Remaining, d.Reset, d.RetryAfter
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Allowed)
}
