package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/store/storetest"
	"github.com/fleetlimit/fleetlimit/window"
)

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.Run(t, func(t *testing.T) store.Backend { return st })
}

func TestKeysShareASlot(t *testing.T) {
	st := &redisstore.Store{}
	ks := redisinspect.Of(st).Keys("api/key:{odd}")
	if len(ks) != 2 {
		t.Fatal(ks)
	}
	tag := func(k string) string {
		i := indexByte(k, '{')
		j := indexByte(k[i+1:], '}')
		return k[i+1 : i+1+j]
	}
	if tag(ks[0]) != tag(ks[1]) || tag(ks[0]) == "" {
		t.Fatalf("keys %v do not share a hash tag", ks)
	}
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// The same contract on a three-node Redis Cluster: each key's two Redis
// keys share a slot, and batched syncs span nodes.
func TestContractOnCluster(t *testing.T) {
	addrs := redistest.StartCluster(t, 3)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: strings.Split(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := redisinspect.Of(st).Client().(*redis.ClusterClient); !ok {
		t.Fatalf("Dial(%s) made a %T, not a cluster client", addrs, redisinspect.Of(st).Client())
	}
	storetest.Run(t, func(t *testing.T) store.Backend { return st })
}

// A key's life (Pull.Gen) stays put while Redis keeps the key, and changes
// when Redis loses it (FLUSHALL here; a restart without persistence or an
// eviction alike): that is how a gateway tells that Redis forgot a window.
func TestGenChangesWhenRedisForgets(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, err := redisstore.New(ctx, redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, spec := range []window.Spec{{Size: time.Minute}, {Size: time.Minute, Buckets: 12}} {
		k := store.Key{Name: "gen/" + spec.String(), Limit: 10, Window: spec}
		sync := func(now int64) store.Pull {
			items := []store.SyncItem{{Key: k, Push: store.Push{Gateway: 0, Admits: []int64{now}, Seq: uint64(now), Epoch: 1}}}
			if err := st.Sync(ctx, now, items); err != nil {
				t.Fatal(err)
			}
			return items[0].Pull
		}
		first := sync(storetest.T0)
		a, err := st.Ask(ctx, storetest.T0+1e6, k, 1, store.Query{Kind: store.QueryCentral, N: 1})
		if err != nil {
			t.Fatal(err)
		}
		second := sync(storetest.T0 + 2e6)
		if first.Gen == 0 || second.Gen != first.Gen || a.Gen != first.Gen {
			t.Fatalf("%v: lives %d, %d and %d for a key Redis kept, want one, not 0", spec, first.Gen, a.Gen, second.Gen)
		}
		if err := redisinspect.Of(st).Client().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		after := sync(storetest.T0 + 3e6)
		if after.Gen == first.Gen || after.Gen == 0 || after.Count != 1 {
			t.Fatalf("%v: after FLUSHALL life %d (was %d), count %d: want a new life and only the new admit", spec, after.Gen, first.Gen, after.Count)
		}
	}
}

// New refuses, before any connection, options it cannot honour.
func TestNewRefusesBadOptions(t *testing.T) {
	slow := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // deadlines not applied to its sockets
	defer slow.Close()
	for _, tc := range []struct {
		opt  redisstore.Options
		want string
	}{
		{redisstore.Options{}, "no Redis address"},
		{redisstore.Options{Addrs: []string{"127.0.0.1:1"}, Mode: "ring"}, "want single, cluster or sentinel"},
		{redisstore.Options{Addrs: []string{"127.0.0.1:1"}, Network: "udp"}, "want tcp or unix"},
		{redisstore.Options{Addrs: []string{"a", "b"}, Network: "unix"}, "one path"},
		{redisstore.Options{Addrs: []string{"127.0.0.1:1"}, Mode: "sentinel"}, "master's name"},
		{redisstore.Options{Client: slow}, "ContextTimeoutEnabled"},
	} {
		if st, err := redisstore.New(context.Background(), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			if st != nil {
				st.Close()
			}
			t.Errorf("%+v: %v, want an error naming %q", tc.opt, err, tc.want)
		}
	}
}
