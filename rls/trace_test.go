package rls

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/metadata"
)

const traceConfig = `
domain: d
descriptors:
  - key: user
    rate_limit:
      name: per-user
      unit: minute
      requests_per_unit: 1
fleetlimit:
  design: central-log
`

// The caller's span, as Envoy would send it: traceparent in the call's
// metadata or the /json request's headers.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// tracedService is a service on traceConfig whose decisions and store
// round trips are recorded by an in-memory exporter.
func tracedService(t *testing.T, values bool) (pb.RateLimitServiceClient, *Service, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := tp.Tracer("fleetlimit")
	lc := parse(t, traceConfig).Settings.Limiter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	lc.StoreSpan = StoreSpan(tr)
	c, svc := serveWith(t, traceConfig, lc)
	svc.SetTracing(Tracing{Tracer: tr, Values: values})
	return c, svc, exp
}

// checkSpans finds the decision's span and its store round trip's among
// the exported spans, both in the caller's trace, and returns the
// decision's attributes.
func checkSpans(t *testing.T, spans tracetest.SpanStubs) map[attribute.Key]attribute.Value {
	t.Helper()
	var dec, st *tracetest.SpanStub
	for i := range spans {
		switch spans[i].Name {
		case "fleetlimit.ShouldRateLimit":
			dec = &spans[i]
		case "fleetlimit.store":
			st = &spans[i]
		}
	}
	if dec == nil || st == nil {
		t.Fatalf("spans %v: want a decision and its store round trip", names(spans))
	}
	if got := dec.SpanContext.TraceID().String(); got != callerTrace {
		t.Errorf("decision's trace %s, want the caller's %s", got, callerTrace)
	}
	if got := dec.Parent.SpanID().String(); got != callerSpan {
		t.Errorf("decision's parent %s, want the caller's span %s", got, callerSpan)
	}
	if st.Parent.SpanID() != dec.SpanContext.SpanID() || st.SpanContext.TraceID() != dec.SpanContext.TraceID() {
		t.Errorf("the store round trip is not the decision's child")
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range dec.Attributes {
		attrs[a.Key] = a.Value
	}
	return attrs
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// A decision over gRPC is a span in the caller's trace, with the design,
// the limit and the outcome, its store round trip a child span; the
// descriptor's value is not recorded unless asked.
func TestTraceGRPC(t *testing.T) {
	for _, values := range []bool{false, true} {
		c, _, exp := tracedService(t, values)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", traceparent)
		req := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "alice")}}
		for range 2 {
			if _, err := c.ShouldRateLimit(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		spans := exp.GetSpans()
		if len(spans) != 4 {
			t.Fatalf("%d spans %v, want a decision and a round trip for each of 2 calls", len(spans), names(spans))
		}
		first := checkSpans(t, spans[:2])
		second := checkSpans(t, spans[2:])
		want := map[string]string{"fleetlimit.design": "central-log", "ratelimit.domain": "d"}
		for k, v := range want {
			if got := first[attribute.Key(k)].AsString(); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if got := first["ratelimit.code"].AsString(); got != "OK" {
			t.Errorf("first code %q", got)
		}
		if got := second["ratelimit.code"].AsString(); got != "OVER_LIMIT" {
			t.Errorf("second code %q, want OVER_LIMIT", got)
		}
		if got := first["ratelimit.limits"].AsStringSlice(); !slices.Equal(got, []string{"per-user: 1 per MINUTE"}) {
			t.Errorf("limits %q", got)
		}
		got := strings.Join(first["ratelimit.descriptors"].AsStringSlice(), ";")
		if want := map[bool]string{false: "user", true: "user=alice"}[values]; got != want {
			t.Errorf("values %v: descriptors %q, want %q", values, got, want)
		}
	}
}

// The same through /json, the trace context in the request's headers.
func TestTraceJSON(t *testing.T) {
	_, svc, exp := tracedService(t, false)
	r := httptest.NewRequest("POST", "/json", strings.NewReader(`{"domain":"d","descriptors":[{"entries":[{"key":"user","value":"bob"}]}]}`))
	r.Header.Set("traceparent", traceparent)
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, r)
	if rec.Code != 200 {
		t.Fatalf("/json: %d %s", rec.Code, rec.Body)
	}
	checkSpans(t, exp.GetSpans())
}

// Tracing off records nothing and never asks the store span hook for a
// span; a caller that is not sampled gets no spans either.
func TestTraceOffAndUnsampled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	defer tp.Shutdown(context.Background())
	lc := parse(t, traceConfig).Settings.Limiter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	lc.StoreSpan = StoreSpan(tp.Tracer("fleetlimit"))
	c, svc := serveWith(t, traceConfig, lc)
	req := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "carol")}}
	if _, err := c.ShouldRateLimit(context.Background(), req); err != nil { // tracing off
		t.Fatal(err)
	}
	svc.SetTracing(Tracing{Tracer: tp.Tracer("fleetlimit")})
	unsampled := "00-" + callerTrace + "-" + callerSpan + "-00"
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", unsampled)
	if _, err := c.ShouldRateLimit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Fatalf("spans %v, want none: tracing off, then a caller not sampled", names(spans))
	}
}
