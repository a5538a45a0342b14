package rls

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// A request past a bound is refused whole, naming the bound, with
// INVALID_ARGUMENT over gRPC and 400 on /json (413 for a body past 1 MiB),
// and creates no key; one just within every bound is decided.
func TestRequestBounds(t *testing.T) {
	c, svc := serve(t, testConfig)
	many := func(n int, kv ...string) []*rlv3.RateLimitDescriptor {
		ds := make([]*rlv3.RateLimitDescriptor, n)
		for i := range ds {
			ds[i] = desc(append([]string{"k", fmt.Sprint(i)}, kv...)...)
		}
		return ds
	}
	entries := func(n int) *rlv3.RateLimitDescriptor {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprint("k", i), "v")
		}
		return desc(kv...)
	}
	mib := strings.Repeat("x", 1<<20)
	for _, c0 := range []struct {
		name string
		req  *pb.RateLimitRequest
		want string
	}{
		{"10,000 descriptors", &pb.RateLimitRequest{Domain: "d", Descriptors: many(10_000)}, "10000 descriptors in one request: at most 64"},
		{"65 descriptors", &pb.RateLimitRequest{Domain: "d", Descriptors: many(65)}, "at most 64"},
		{"33 entries", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{entries(33)}}, "has 33 entries: at most 32"},
		{"a 1 MiB value", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("key", mib)}}, "a value of 1048576 bytes: at most 4096"},
		{"a long key", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc(strings.Repeat("k", 257), "v")}}, "a key of 257 bytes"},
		{"a long domain", &pb.RateLimitRequest{Domain: strings.Repeat("d", 257), Descriptors: many(1)}, "domain of 257 bytes"},
		{"a big descriptor", &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{
			desc("a", strings.Repeat("1", 4000), "b", strings.Repeat("2", 4000), "c", strings.Repeat("3", 400))}}, "keys and values of 8403 bytes: at most 8192"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.ShouldRateLimit(ctx, c0.req)
		cancel()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c0.want) {
			t.Errorf("%s: gRPC answered %v, want INVALID_ARGUMENT saying %q", c0.name, err, c0.want)
		}
		body, _ := protojson.Marshal(c0.req)
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/json", strings.NewReader(string(body))))
		wantCode := http.StatusBadRequest
		if len(body) > MaxJSONBytes {
			wantCode = http.StatusRequestEntityTooLarge
		}
		if rec.Code != wantCode {
			t.Errorf("%s: /json (%d bytes) answered %d %q, want %d", c0.name, len(body), rec.Code, rec.Body.String(), wantCode)
		}
	}
	if n := svc.lim.Stats().Keys; n != 0 {
		t.Fatalf("refused requests created %d keys", n)
	}
	// Just within every bound: decided.
	within := &pb.RateLimitRequest{Domain: "d", Descriptors: append(many(63),
		desc("a", strings.Repeat("1", 4000), "b", strings.Repeat("2", 4000), "c", strings.Repeat("3", 189)))} // 8,192 bytes
	if r := call(t, c, within); r.OverallCode != pb.RateLimitResponse_OK {
		t.Fatalf("a request within every bound: %v", r.OverallCode)
	}
}
