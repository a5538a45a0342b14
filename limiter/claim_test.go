package limiter

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/internal/slowproxy"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// On a shared store a gateway claims its index: a second live process with
// the same index is refused, with a message that says why; another index,
// or another fleet, is not; a closed gateway's index is free at once, and a
// crashed one's once its claim expires.
func TestGatewayIndexIsClaimed(t *testing.T) {
	srv := redistest.Start(t)
	open := func(gw int, fleet string) (*Limiter, error) {
		t.Helper()
		st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return New(Config{Gateways: 2, Gateway: gw, Store: st, ClaimTTL: 600 * time.Millisecond, Fleet: fleet, Logger: quietLog})
	}
	a, err := open(0, "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// the second says at once that it waits, then refuses
	said := &lines{text: "held by another process; waiting"}
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	go func() {
		time.Sleep(200 * time.Millisecond)
		if said.count() != 1 {
			t.Errorf("200 ms into the wait for a held index, %d lines said so, want one", said.count())
		}
	}()
	_, err = New(Config{Gateways: 2, Gateway: 0, Store: st, ClaimTTL: 600 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(said, nil))})
	if err == nil || !strings.Contains(err.Error(), "gateway index 0 of 2 of fleet \"default\" is held by another live process") {
		t.Fatalf("a second gateway 0: %v", err)
	} else if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Fatalf("refused after %v: it must wait out the holder's TTL first", waited)
	}
	b, err := open(1, "")
	if err != nil {
		t.Fatalf("gateway 1: %v", err)
	}
	defer b.Close()
	other, err := open(0, "other")
	if err != nil {
		t.Fatalf("gateway 0 of another fleet: %v", err)
	}
	defer other.Close()
	a.Close()
	c, err := open(0, "")
	if err != nil {
		t.Fatalf("gateway 0 after its holder closed: %v", err)
	}
	c.Close()

	// A crashed holder: its claim, never renewed, expires.
	rdb := srv.Client()
	defer rdb.Close()
	if err := rdb.Set(context.Background(), "fl:gateway:default:0", "crashed:1:0", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	d, err := open(0, "")
	if err != nil {
		t.Fatalf("gateway 0 after a crashed holder's claim expired: %v", err)
	}
	d.Close()
}

// A claim that times out on a slow store is tried again within ClaimTTL:
// a gateway that starts while every round trip is late by more than its
// SyncTimeout starts once the store is quick again, instead of failing.
func TestClaimOutlastsASlowStore(t *testing.T) {
	srv := redistest.Start(t)
	p := slowproxy.Start(t, srv.Addr)
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{p.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p.SetDelay(400 * time.Millisecond)
	go func() { time.Sleep(time.Second); p.SetDelay(0) }()
	l, err := New(Config{Gateways: 2, Gateway: 1, Store: st, SyncTimeout: 100 * time.Millisecond, ClaimTTL: 30 * time.Second, Logger: quietLog})
	if err != nil {
		t.Fatalf("a claim through a store slow for a second: %v", err)
	}
	l.Close()
}
