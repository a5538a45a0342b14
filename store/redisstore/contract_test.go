package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/store/storetest"
)

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	st, err := redisstore.Dial(context.Background(), srv.Addr, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.Run(t, func(t *testing.T) store.Backend { return st })
}

func TestKeysShareASlot(t *testing.T) {
	st := &redisstore.Store{}
	ks := st.Keys("api/key:{odd}")
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
	st, err := redisstore.Dial(context.Background(), addrs, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.Client().(*redis.ClusterClient); !ok {
		t.Fatalf("Dial(%s) made a %T, not a cluster client", addrs, st.Client())
	}
	storetest.Run(t, func(t *testing.T) store.Backend { return st })
}
