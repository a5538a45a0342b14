package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// collector is a fake OTLP/HTTP trace collector on loopback that keeps
// what it is sent.
type collector struct {
	mu   sync.Mutex
	reqs []*coltrace.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, &req)
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// serve with upstream's TRACING_* variables exports a span per decision
// over OTLP to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT names, in the
// caller's trace and under the service name asked for; the last spans are
// flushed when serve stops.
func TestServeExportsTraces(t *testing.T) {
	var col collector
	ts := httptest.NewServer(&col)
	defer ts.Close()
	cfg := filepath.Join(t.TempDir(), "limits.yaml")
	os.WriteFile(cfg, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"), 0o644)
	grpcAddr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfg, "--grpc-addr", grpcAddr, "--http-addr", freeAddr(t), "--drain-delay", "0s")
	cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1", "TRACING_ENABLED=true", "TRACING_SERVICE_NAME=edge-rl",
		"TRACING_SAMPLING_RATE=1", "TRACING_EXPORTER_PROTOCOL=http", "OTEL_EXPORTER_OTLP_ENDPOINT="+ts.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	up := false
	for range 400 {
		if c, err := net.Dial("tcp", grpcAddr); err == nil {
			c.Close()
			up = true
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !up {
		t.Fatalf("serve did not come up:\n%s", stderr.String())
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if _, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d",
		Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: "secret"}}}}}); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop:\n%s", stderr.String())
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	var found bool
	for _, r := range col.reqs {
		for _, rs := range r.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if sp.Name != "fleetlimit.ShouldRateLimit" {
						continue
					}
					found = true
					if got := string(sp.TraceId); got != string([]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}) {
						t.Errorf("span in trace %x, want the caller's", sp.TraceId)
					}
					if service != "edge-rl" {
						t.Errorf("service.name %q, want edge-rl", service)
					}
					for _, a := range sp.Attributes {
						if strings.Contains(a.GetValue().String(), "secret") {
							t.Errorf("attribute %s carries the descriptor's value", a.Key)
						}
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("the collector got %d exports and no decision span; serve said:\n%s", len(col.reqs), stderr.String())
	}
}

// A tracing setting serve cannot honour is refused, naming it.
func TestServeRefusesBadTracing(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"TRACING_EXPORTER_PROTOCOL=thrift", `--tracing-protocol "thrift"`},
		{"TRACING_SAMPLING_RATE=1.5", "--tracing-sampling-rate 1.5"},
	} {
		cmd := exec.Command(os.Args[0], "serve", "--config", "testdata/upstream/ratelimit/config/example.yaml", "--grpc-addr", freeAddr(t), "--http-addr", freeAddr(t))
		cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1", "TRACING_ENABLED=true", c.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v\n%s\nwant an error naming %s", c.env, err, out, c.want)
		}
	}
}
