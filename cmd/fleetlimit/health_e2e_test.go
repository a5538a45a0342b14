package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// A serve process's health follows its store and its shutdown: SERVING,
// NOT_SERVING while Redis is down (and /healthcheck 503), SERVING when it
// is back, and NOT_SERVING after SIGTERM before the process exits. Server
// reflection lists the services, as grpcurl's "list" asks.
func TestServeHealthTransitions(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	srv := redistest.Start(t)
	cfg := filepath.Join(t.TempDir(), "limits.yaml")
	os.WriteFile(cfg, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\nfleetlimit:\n  sync: 50ms\n"), 0o644)
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfg, "--redis", srv.Addr, "--grpc-addr", grpcAddr,
		"--http-addr", httpAddr, "--drain-delay", "1500ms")
	cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1")
	logs := &testWriter{t: t, prefix: "serve: "}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	status := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
		if err != nil {
			return "error: " + err.Error()
		}
		return r.Status.String()
	}
	await := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for got := status(); got != want; got = status() {
			if time.Now().After(deadline) {
				t.Fatalf("health %s, want %s", got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	httpStatus := func() int {
		resp, err := http.Get("http://" + httpAddr + "/healthcheck")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	await("SERVING")
	if c := httpStatus(); c != 200 {
		t.Fatalf("/healthcheck %d while serving", c)
	}
	// Reflection: the services a grpcurl list would print.
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	listed := fmt.Sprint(r.GetListServicesResponse().GetService())
	for _, want := range []string{"envoy.service.ratelimit.v3.RateLimitService", "grpc.health.v1.Health"} {
		if !contains(listed, want) {
			t.Fatalf("reflection lists %s, not %s", listed, want)
		}
	}
	stream.CloseSend()

	srv.Stop()
	await("NOT_SERVING")
	if c := httpStatus(); c != 503 {
		t.Fatalf("/healthcheck %d while the store is down, want 503", c)
	}
	time.Sleep(500 * time.Millisecond) // ten failed syncs
	srv.Restart()
	await("SERVING")
	// The outage is one warning with its cause and one line when it ends;
	// the Redis client's own lines stay out of the info log.
	text := logs.text()
	// The cause is the first failed call's: a new connection refused, or
	// one the pool held closed under it (EOF), whichever came first.
	if n := strings.Count(text, "store unreachable"); n != 1 || !(strings.Contains(text, "connection refused") || strings.Contains(text, "error=EOF")) {
		t.Fatalf("%d store-unreachable lines (want 1, with the cause 'connection refused' or EOF):\n%s", n, text)
	}
	if strings.Contains(text, "redis: ") || strings.Count(text, "store reachable again") != 1 {
		t.Fatalf("the Redis client's own lines, or not one recovery line, in the log:\n%s", text)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	await("NOT_SERVING") // still answering, no longer serving
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
