package redistest

import (
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
	"path/filepath"
	"testing"
	"time"
)

// PKI is a test CA and the certificates it signed, written as PEM files in
// a test's directory: for a redis-server over TLS (Options.TLS) and for
// servers and clients of the tests' own.
type PKI struct {
	Dir    string         // where the PEM files are
	CAFile string         // the CA's certificate, PEM
	Pool   *x509.CertPool // the CA, to trust
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// NewPKI makes a CA valid for the next hour.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &PKI{Dir: t.TempDir(), ca: ca, caKey: key, Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	p.CAFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *PKI) write(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue signs a certificate for 127.0.0.1 (server or client, by usage)
// and returns its PEM files and the tls.Certificate.
func (p *PKI) Issue(t testing.TB, name string, usage x509.ExtKeyUsage) (certFile, keyFile string, c tls.Certificate) {
	t.Helper()
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

// StartTLS starts a redis-server that speaks only TLS, with a certificate
// for 127.0.0.1 that p signed, and no password.
func StartTLS(t testing.TB, p *PKI) *Server {
	t.Helper()
	cert, key, _ := p.Issue(t, "redis", x509.ExtKeyUsageServerAuth)
	return StartWith(t, Options{TLS: &TLSFiles{Cert: cert, Key: key, CA: p.CAFile}})
}
