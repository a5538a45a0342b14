package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
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
)

// pki is a test CA and the certificates it signed, written as PEM files.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPool *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{dir: t.TempDir(), ca: ca, caKey: key, caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate for 127.0.0.1 (server or client) and returns
// its PEM files and the tls.Certificate.
func (p *pki) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certFile, keyFile string, c tls.Certificate) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
	c, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, c
}

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
	p := newPKI(t)
	cert, key, _ := p.issue(t, "server", x509.ExtKeyUsageServerAuth)
	_, _, client := p.issue(t, "client", x509.ExtKeyUsageClientAuth)
	trusting := credentials.NewTLS(&tls.Config{RootCAs: p.caPool})

	addr := startServe(t, "--grpc-tls-cert", cert, "--grpc-tls-key", key)
	if err := ask(addr, trusting); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := ask(addr, insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext client was answered by a TLS server")
	}

	mtls := startServe(t, "--grpc-tls-cert", cert, "--grpc-tls-key", key, "--grpc-tls-client-ca", filepath.Join(p.dir, "ca.pem"))
	if err := ask(mtls, credentials.NewTLS(&tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{client}})); err != nil {
		t.Fatalf("mTLS client with a certificate: %v", err)
	}
	if err := ask(mtls, trusting); err == nil {
		t.Fatal("mTLS server answered a client without a certificate")
	}
	other := newPKI(t)
	_, _, stranger := other.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	if err := ask(mtls, credentials.NewTLS(&tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{stranger}})); err == nil {
		t.Fatal("mTLS server answered a client whose certificate another CA signed")
	}
}
