package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// startServe starts a serve process with extra flags and waits for its gRPC port.
func startServe(t *testing.T, extra ...string) string {
	cfg := filepath.Join(t.TempDir(), "limits.yaml")
	os.WriteFile(cfg, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"), 0o644)
	grpcAddr := freeAddr(t)
	args := append([]string{"serve", "--config", cfg, "--grpc-addr", grpcAddr, "--http-addr", freeAddr(t)}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1")
	cmd.Stderr = &testWriter{t: t, prefix: "serve: "}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 400; i++ {
		if c, err := net.Dial("tcp", grpcAddr); err == nil {
			c.Close()
			return grpcAddr
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("serve did not come up")
	return ""
}

// ask sends one request over creds and returns its error.
func ask(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d",
		Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
	return err
}

// serve over TLS and mutual TLS, with real TLS clients: a client that
// trusts the CA gets answers; a plaintext client does not; under mutual TLS
// a client without a certificate, or with one from another CA, does not.
func TestServeTLSAndMutualTLS(t *testing.T) {
	p := redistest.NewPKI(t)
	cert, key, _ := p.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	_, _, client := p.Issue(t, "client", x509.ExtKeyUsageClientAuth)
	trusting := credentials.NewTLS(&tls.Config{RootCAs: p.Pool})

	addr := startServe(t, "--grpc-tls-cert", cert, "--grpc-tls-key", key)
	if err := ask(addr, trusting); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := ask(addr, insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext client was answered by a TLS server")
	}

	mtls := startServe(t, "--grpc-tls-cert", cert, "--grpc-tls-key", key, "--grpc-tls-client-ca", p.CAFile)
	if err := ask(mtls, credentials.NewTLS(&tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{client}})); err != nil {
		t.Fatalf("mTLS client with a certificate: %v", err)
	}
	if err := ask(mtls, trusting); err == nil {
		t.Fatal("mTLS server answered a client without a certificate")
	}
	other := redistest.NewPKI(t)
	_, _, stranger := other.Issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	if err := ask(mtls, credentials.NewTLS(&tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{stranger}})); err == nil {
		t.Fatal("mTLS server answered a client whose certificate another CA signed")
	}
}
