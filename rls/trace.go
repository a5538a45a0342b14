package rls

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// Tracing says how decisions are traced. The zero value traces nothing,
// at no cost.
type Tracing struct {
	// Tracer makes the spans; nil: none.
	Tracer trace.Tracer
	// Values records each descriptor's entries with their values (API
	// keys, user ids); off, only the entries' keys.
	Values bool
}

// propagator reads the caller's trace context (W3C traceparent and
// baggage), as Envoy sends it in the call's metadata or a /json request's
// headers.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// SetTracing makes the service trace its decisions as t says; set it before
// serving.
func (s *Service) SetTracing(t Tracing) { s.tracing = t }

// StoreSpan is a limiter.Config.StoreSpan that records each store round
// trip of a decision as a child span of the decision's, named
// "fleetlimit.store".
func StoreSpan(tr trace.Tracer) func(ctx context.Context) func(error) {
	return func(ctx context.Context) func(error) {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return nil
		}
		_, span := tr.Start(ctx, "fleetlimit.store", trace.WithSpanKind(trace.SpanKindClient))
		return func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(otelcodes.Error, err.Error())
			}
			span.End()
		}
	}
}

// traced is ShouldRateLimit in a span, "fleetlimit.ShouldRateLimit", a
// child of the caller's span when the call carries one.
func (s *Service) traced(ctx context.Context, req *pb.RateLimitRequest, header http.Header) (*pb.RateLimitResponse, error) {
	if header != nil {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(header))
	} else if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = propagator.Extract(ctx, metadataCarrier(md))
	}
	ctx, span := s.tracing.Tracer.Start(ctx, "fleetlimit.ShouldRateLimit", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	resp, err := s.shouldRateLimit(ctx, req)
	if !span.IsRecording() {
		return resp, err
	}
	cfg := s.cfg.Load()
	span.SetAttributes(attribute.String("ratelimit.domain", req.GetDomain()),
		attribute.String("fleetlimit.design", cfg.Settings.Design),
		attribute.StringSlice("ratelimit.descriptors", s.describe(req)))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
		return resp, err
	}
	limits := make([]string, len(resp.Statuses))
	codes := make([]string, len(resp.Statuses))
	for i, st := range resp.Statuses {
		codes[i] = st.GetCode().String()
		if l := st.GetCurrentLimit(); l != nil {
			limits[i] = limitText(l)
		}
	}
	span.SetAttributes(attribute.String("ratelimit.code", resp.GetOverallCode().String()),
		attribute.StringSlice("ratelimit.limits", limits), attribute.StringSlice("ratelimit.codes", codes))
	return resp, nil
}

// describe is each descriptor's entries, "key" or "key=value" (with
// Values), joined by commas.
func (s *Service) describe(req *pb.RateLimitRequest) []string {
	out := make([]string, len(req.GetDescriptors()))
	for i, d := range req.GetDescriptors() {
		var b strings.Builder
		for j, e := range d.GetEntries() {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(e.GetKey())
			if s.tracing.Values {
				b.WriteByte('=')
				b.WriteString(e.GetValue())
			}
		}
		out[i] = b.String()
	}
	return out
}

// limitText is a status's limit: "name: 100 per MINUTE", or without the
// name when it has none.
func limitText(l *pb.RateLimitResponse_RateLimit) string {
	t := strconv.FormatUint(uint64(l.GetRequestsPerUnit()), 10) + " per " + l.GetUnit().String()
	if n := l.GetName(); n != "" {
		return n + ": " + t
	}
	return t
}

// metadataCarrier reads gRPC metadata as a propagation carrier.
type metadataCarrier metadata.MD

func (m metadataCarrier) Get(k string) string {
	if v := metadata.MD(m).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m metadataCarrier) Set(k, v string) { metadata.MD(m).Set(k, v) }

func (m metadataCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
