package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// tracingFlags are serve's OpenTelemetry settings, upstream's TRACING_*
// variables as flags. The exporter's endpoint, headers and TLS are the
// OTLP exporter's own OTEL_EXPORTER_OTLP_* variables, as upstream's.
type tracingFlags struct {
	on                          bool
	protocol                    string
	name, namespace, instanceID string
	rate                        float64
	values                      bool
}

func (t *tracingFlags) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&t.on, "tracing", false, "export a span per decision over OTLP, the store's round trip as a child (TRACING_ENABLED; the endpoint is OTEL_EXPORTER_OTLP_ENDPOINT's)")
	f.StringVar(&t.protocol, "tracing-protocol", "http", "OTLP over http or grpc (TRACING_EXPORTER_PROTOCOL)")
	f.StringVar(&t.name, "tracing-service-name", "RateLimit", "the service name of the spans (TRACING_SERVICE_NAME; upstream's default)")
	f.StringVar(&t.namespace, "tracing-service-namespace", "", "the service namespace (TRACING_SERVICE_NAMESPACE)")
	f.StringVar(&t.instanceID, "tracing-service-instance-id", "", "the service instance id, such as the pod's name (TRACING_SERVICE_INSTANCE_ID; default a random UUID)")
	f.Float64Var(&t.rate, "tracing-sampling-rate", 1, "share of the decisions traced when the caller did not decide, 0 to 1 (TRACING_SAMPLING_RATE)")
	f.BoolVar(&t.values, "tracing-values", false, "record the descriptors' values (API keys, user ids) in the spans, not only their keys")
}

// validate names a bad tracing setting.
func (t tracingFlags) validate() error {
	if t.protocol != "http" && t.protocol != "grpc" {
		return fmt.Errorf("--tracing-protocol %q: want http or grpc", t.protocol)
	}
	if math.IsNaN(t.rate) || t.rate < 0 || t.rate > 1 {
		return fmt.Errorf("--tracing-sampling-rate %v: want a number from 0 to 1", t.rate)
	}
	return nil
}

// provider is the tracer provider of the flags, exporting over OTLP in
// batches; nil when tracing is off. Shut it down to flush what is left.
func (t tracingFlags) provider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !t.on {
		return nil, nil
	}
	var client otlptrace.Client
	if t.protocol == "grpc" {
		client = otlptracegrpc.NewClient()
	} else {
		client = otlptracehttp.NewClient()
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	id := t.instanceID
	if id == "" {
		id = randomUUID()
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(t.name),
		semconv.ServiceNamespace(t.namespace), semconv.ServiceInstanceID(id))
	// as upstream: the caller's decision when it made one, else the rate
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.rate))),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(5*time.Second)), sdktrace.WithResource(res)), nil
}

// randomUUID is a version 4 UUID.
func randomUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// flushTraces exports the spans still batched, for at most 5 s.
func flushTraces(tp *sdktrace.TracerProvider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log.Warn("fleetlimit serve: flushing the last spans", "err", err)
	}
}
