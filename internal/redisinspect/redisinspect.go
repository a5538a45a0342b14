// Package redisinspect reads what a redisstore.Store keeps in Redis, for
// tests that check the store against what the gateways were told: its key
// layout stays redisstore's own, and none of it is public API. It never
// writes.
package redisinspect

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/store"
)

// Inspector reads one Store's data.
type Inspector interface {
	// Keys returns the two Redis keys of a rate-limited key.
	Keys(name string) []string
	// Stamps returns the timestamps (ns, to the microsecond) of a key's
	// log, each as many times as the requests its admit stands for.
	Stamps(ctx context.Context, name string) ([]int64, error)
	// StampsOf is Stamps for a limit of a key with several (store.Key.Part).
	StampsOf(ctx context.Context, k store.Key) ([]int64, error)
	// Members returns the members of a key's log.
	Members(ctx context.Context, name string) ([]string, error)
	// Client returns the Store's Redis client.
	Client() redis.UniversalClient
}

// Of returns the Inspector of a *redisstore.Store; redisstore sets it.
var Of func(st any) Inspector
