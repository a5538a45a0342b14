package redisstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles name the PEM files of a TLS connection to Redis. serve's
// --redis-tls-* flags and the Caddy module's redis tls block make theirs
// with it.
type TLSFiles struct {
	CA   string // the CA bundle that signed the server; "": the system's
	Cert string // a client certificate, with Key, or neither
	Key  string // the client certificate's key
	// SkipNameCheck skips checking the server's name; its chain is still
	// checked.
	SkipNameCheck bool
}

// Config is the TLS configuration the files make, for Options.TLS.
func (f TLSFiles) Config() (*tls.Config, error) {
	ca, cert, key, skipName := f.CA, f.Cert, f.Key, f.SkipNameCheck
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("a client certificate and its key go together")
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	if skipName {
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true // the chain is verified below, the name is not
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("redis sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}
