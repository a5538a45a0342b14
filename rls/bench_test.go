package rls

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// BenchmarkShouldRateLimit is the service's part of a request, without
// gRPC: resolving the descriptor, the limiter's decision (shared-counter on
// the embedded store, 10,000 keys, a limit nobody reaches), the metrics and
// the response. The clock advances 1 ms a request, so that each key's
// record of its admits reaches its steady size (the admits of one window)
// within the run, as it does in a server that has run a window: the
// allocations counted are a running server's, not a warm-up's.
// Tracing off, on (every decision a span, batched to an exporter that
// drops them) and sampled at 1%.
// go test -bench ShouldRateLimit -benchmem ./rls
func BenchmarkShouldRateLimit(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: tracing off
	}{{"tracing-off", nil}, {"tracing-on", sdktrace.AlwaysSample()}, {"tracing-1pct", sdktrace.TraceIDRatioBased(0.01)}} {
		b.Run(c.name, func(b *testing.B) {
			var tr Tracing
			if c.sampler != nil {
				// a batching exporter that drops what it is given: the
				// spans' cost in the request path, not an exporter's
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(c.sampler)),
					sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				defer tp.Shutdown(context.Background())
				tr.Tracer = tp.Tracer("fleetlimit")
			}
			benchShouldRateLimit(b, tr)
		})
	}
}

func benchShouldRateLimit(b *testing.B, tr Tracing) {
	cfg, err := Parse("bench.yaml", strings.NewReader("domain: edge\ndescriptors:\n  - key: api_key\n    rate_limit: {unit: minute, requests_per_unit: 1000000000}\n"))
	if err != nil {
		b.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Millisecond))) }
	lim, err := limiter.New(limiter.Config{Sync: time.Second, WindowKind: cfg.Settings.WindowKind, Now: now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer lim.Close()
	svc := NewService(cfg, lim)
	svc.SetTracing(tr)
	reqs := make([]*pb.RateLimitRequest, 10_000)
	for i := range reqs {
		reqs[i] = &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{{
			Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "api_key", Value: "key-" + strconv.Itoa(i)}}}}}
	}
	ctx := context.Background()
	for range 10 { // every key past its first window
		for _, r := range reqs {
			svc.ShouldRateLimit(ctx, r)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := svc.ShouldRateLimit(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}
