// Package giveup carries, in a call's context, the instant its caller
// stops waiting for the answer: the limiter sets it, a store reads it. It
// never reads a clock.
package giveup

import (
	"context"
	"time"
)

// key is the context key of With's instant.
type key struct{}

// With tells a store the instant its caller stops waiting for the
// answer: the store must not apply the call once that instant has passed,
// though it may go on reading the answer until ctx's deadline (so that a
// connection is not lost to every late answer). A caller that gives up
// takes back what the call may have done before (store.Repair.Withdraw).
func With(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, key{}, at)
}

// At returns the instant set by With, or else ctx's deadline.
func At(ctx context.Context) (time.Time, bool) {
	if at, ok := ctx.Value(key{}).(time.Time); ok {
		return at, true
	}
	return ctx.Deadline()
}
