package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fleetlimit/fleetlimit/grpcmw"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// service answers EmptyCall, and StreamingOutputCall with one message per
// size asked for.
type service struct {
	testpb.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (service) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, s testpb.TestService_StreamingOutputCallServer) error {
	for range req.ResponseParameters {
		if err := s.Send(&testpb.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
	return nil
}

// serve runs the test service on a loopback port behind the interceptors
// of l and opt, and returns a client of it.
func serve(t testing.TB, l *limiter.Limiter, opt grpcmw.Options) testpb.TestServiceClient {
	t.Helper()
	limits, err := grpcmw.ServerOptions(l, opt)
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, limits...)
}

// serveWith runs the test service on a loopback port with the server
// options so, and returns a client of it.
func serveWith(t testing.TB, so ...grpc.ServerOption) testpb.TestServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(so...)
	testpb.RegisterTestServiceServer(s, service{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewTestServiceClient(cc)
}

func newLimiter(t testing.TB, limit int) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limiter.Config{Limit: limit, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func withKey(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "x-api-key", key)
}

// Unary calls keyed by a metadata field: the third of a key limited to two
// a minute is RESOURCE_EXHAUSTED with a RetryInfo the client reads, every
// answer carries the draft's fields, and another key is not touched.
func TestUnaryByMetadata(t *testing.T) {
	c := serve(t, newLimiter(t, 2), grpcmw.Options{Key: grpcmw.Metadata("X-API-Key"), Policy: "per-key"})
	wantRemaining := []string{"r=1", "r=0", "r=0"}
	for i, want := range wantRemaining {
		var hd metadata.MD
		_, err := c.EmptyCall(withKey("alice"), &testpb.Empty{}, grpc.Header(&hd))
		if got := hd.Get("ratelimit-policy"); len(got) != 1 || got[0] != `"per-key";q=2;w=60` {
			t.Errorf("call %d: ratelimit-policy %q", i, got)
		}
		if got := hd.Get("ratelimit"); len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("call %d: ratelimit %q, want %s", i, got, want)
		}
		if i < 2 {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			continue
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("third call: %v, want RESOURCE_EXHAUSTED", err)
		}
		d, ok := grpcmw.RetryDelay(err)
		if !ok || d <= 0 || d > time.Minute {
			t.Fatalf("third call: RetryInfo %v, %v; want a delay within the window", d, ok)
		}
	}
	if _, err := c.EmptyCall(withKey("bob"), &testpb.Empty{}); err != nil {
		t.Fatalf("another key: %v", err)
	}
}

// A stream is one decision when it opens: the first stream of a key
// limited to one carries all its messages, the second is refused.
func TestStreamIsOneDecision(t *testing.T) {
	c := serve(t, newLimiter(t, 1), grpcmw.Options{Key: grpcmw.Metadata("x-api-key")})
	req := &testpb.StreamingOutputCallRequest{ResponseParameters: make([]*testpb.ResponseParameters, 5)}
	recv := func() (int, metadata.MD, error) {
		s, err := c.StreamingOutputCall(withKey("alice"), req)
		if err != nil {
			return 0, nil, err
		}
		n := 0
		for {
			_, err := s.Recv()
			if errors.Is(err, io.EOF) {
				hd, _ := s.Header()
				return n, hd, nil
			}
			if err != nil {
				hd, _ := s.Header()
				return n, hd, err
			}
			n++
		}
	}
	n, hd, err := recv()
	if err != nil || n != 5 {
		t.Fatalf("first stream: %d messages, %v; want 5, nil", n, err)
	}
	if got := hd.Get("ratelimit"); len(got) != 1 || !strings.Contains(got[0], "r=0") {
		t.Errorf("first stream: ratelimit %q", got)
	}
	n, _, err = recv()
	if status.Code(err) != codes.ResourceExhausted || n != 0 {
		t.Fatalf("second stream: %d messages, %v; want 0, RESOURCE_EXHAUSTED", n, err)
	}
	if _, ok := grpcmw.RetryDelay(err); !ok {
		t.Errorf("second stream: no RetryInfo in %v", err)
	}
}

// The peer's address, the method and both joined key calls as they say;
// a skipped method is never counted; a cost below 1 is INTERNAL, never an
// admit.
func TestKeysSkipAndCost(t *testing.T) {
	l := newLimiter(t, 1)
	var keys []string
	record := func(k grpcmw.KeyFunc) grpcmw.KeyFunc {
		return func(ctx context.Context, m string) string { s := k(ctx, m); keys = append(keys, s); return s }
	}
	c := serve(t, l, grpcmw.Options{Key: record(grpcmw.Join(grpcmw.Peer(), grpcmw.Method())),
		Skip: func(m string) bool { return strings.HasSuffix(m, "/StreamingOutputCall") }})
	if _, err := c.EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if want := "127.0.0.1|/grpc.testing.TestService/EmptyCall"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys %q, want [%q]", keys, want)
	}
	for range 3 { // skipped: neither keyed nor limited
		s, err := c.StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{})
		if err == nil {
			_, err = s.Recv()
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("skipped stream: %v", err)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("skipped calls were keyed: %q", keys)
	}
	c = serve(t, l, grpcmw.Options{Cost: func(context.Context, string) int { return 0 }})
	if _, err := c.EmptyCall(context.Background(), &testpb.Empty{}); status.Code(err) != codes.Internal {
		t.Fatalf("cost 0: %v, want INTERNAL", err)
	}
}

// Three gRPC servers, each with its own limiter, on one real redis-server
// share one limit: clients spread over them are admitted exactly L times
// in the window by the exact designs. The store timeout is long, so that
// a busy machine cannot make a call late and the fallback decide.
func TestFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	const k, limit = 3, 40
	for _, dsg := range []string{"central-log", "lease-ask"} {
		t.Run(dsg, func(t *testing.T) {
			var cs []testpb.TestServiceClient
			var ls []*limiter.Limiter
			for i := range k {
				st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{srv.Addr}, Prefix: "grpc:" + dsg + ":"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				l, err := limiter.New(limiter.Config{Design: dsg, Limit: limit, Window: time.Minute, Sync: 100 * time.Millisecond,
					Gateways: k, Gateway: i, Store: st, Timeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				ls = append(ls, l)
				cs = append(cs, serve(t, l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key")}))
			}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for g := range 6 { // six clients, each 30 calls round the servers
				wg.Go(func() {
					for i := range 30 {
						_, err := cs[(g+i)%k].EmptyCall(withKey("shared"), &testpb.Empty{})
						switch status.Code(err) {
						case codes.OK:
							admitted.Add(1)
						case codes.ResourceExhausted:
						default:
							t.Errorf("call: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			var fallbacks int64
			for _, l := range ls {
				fallbacks += l.Stats().Fallbacks
			}
			got := admitted.Load()
			if fallbacks != 0 {
				t.Fatalf("%d decisions fell back with a 5 s timeout on loopback", fallbacks)
			}
			if got > limit || (dsg == "central-log" && got != limit) {
				t.Fatalf("%d of 180 calls admitted with L = %d across %d servers", got, limit, k)
			}
			t.Logf("%s: %d of 180 admitted, L = %d", dsg, got, limit)
		})
	}
}

// Several limits on one key: a call goes on only if both admit it, the
// burst limit's refusal spends nothing of the daily one, ratelimit-policy
// lists both and ratelimit names the one that binds; two limits of one
// name, or an invalid one, are refused when the interceptors are made.
func TestSeveralLimits(t *testing.T) {
	lims := []policy.Policy{
		{Name: "burst", Limit: limiter.Limit{Requests: 2, Window: time.Minute}},
		{Name: "daily", Limit: limiter.Limit{Requests: 3, Window: 24 * time.Hour}},
	}
	c := serve(t, newLimiter(t, 100), grpcmw.Options{Key: grpcmw.Metadata("x-api-key"), Limits: lims})
	const policies = `"burst";q=2;w=60, "daily";q=3;w=86400`
	for i, want := range []struct {
		code codes.Code
		bind string
	}{{codes.OK, `"burst";r=1`}, {codes.OK, `"burst";r=0`}, {codes.ResourceExhausted, `"burst";r=0`}} {
		var hd metadata.MD
		_, err := c.EmptyCall(withKey("carol"), &testpb.Empty{}, grpc.Header(&hd))
		if status.Code(err) != want.code || len(hd.Get("ratelimit")) != 1 || !strings.HasPrefix(hd.Get("ratelimit")[0], want.bind) ||
			len(hd.Get("ratelimit-policy")) != 1 || hd.Get("ratelimit-policy")[0] != policies {
			t.Fatalf("call %d: %v, %v; want %v naming %s", i+1, err, hd, want.code, want.bind)
		}
	}
	l := newLimiter(t, 100)
	for _, tc := range []struct {
		lims []policy.Policy
		want string
	}{
		{[]policy.Policy{lims[0], {Name: "burst", Limit: lims[1].Limit}}, "two limits"},
		{[]policy.Policy{lims[0], {Name: "daily", Limit: limiter.Limit{Requests: 0, Window: time.Hour}}}, "at least 1"},
		{[]policy.Policy{{Name: "burst", Limit: limiter.Limit{Requests: 3}}}, "window"},
	} {
		if _, err := grpcmw.UnaryServerInterceptor(l, grpcmw.Options{Limits: tc.lims}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("unary interceptor of %+v: %v, want an error naming %q", tc.lims, err, tc.want)
		}
		if _, err := grpcmw.StreamServerInterceptor(l, grpcmw.Options{Limits: tc.lims}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("stream interceptor of %+v: %v, want an error naming %q", tc.lims, err, tc.want)
		}
	}
	if _, err := grpcmw.ServerOptions(nil, grpcmw.Options{}); err == nil {
		t.Error("interceptors of no Limiter: made")
	}
}

// A call that reaches a closed limiter (the server shutting down) is
// UNAVAILABLE, which clients retry, not INTERNAL.
func TestClosedLimiterIsUnavailable(t *testing.T) {
	l, err := limiter.New(limiter.Config{Limit: 5, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key")})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EmptyCall(withKey("alice"), &testpb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("after Close: %v, want UNAVAILABLE", err)
	}
}
