package fleetlimitcaddy

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// Redis says how to reach the Redis a fleet shares.
type Redis struct {
	// Addresses are host:port: one node, a Cluster's seed nodes, or the
	// Sentinels.
	Addresses []string `json:"addresses"`
	// Mode is "single" (default; several addresses are a Cluster),
	// "cluster" or "sentinel".
	Mode string `json:"mode,omitempty"`
	// Master is the Sentinel master's name.
	Master   string `json:"master,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	DB       int    `json:"db,omitempty"`
	// Prefix starts every Redis key of this handler; default
	// "fleetlimit:caddy:". Each zone's keys follow it with the zone's name.
	Prefix string `json:"prefix,omitempty"`
	// TLS, when set, reaches Redis over TLS; nil: plaintext.
	TLS *RedisTLS `json:"tls,omitempty"`
}

// RedisTLS says how to check the Redis server and how to be known to it.
type RedisTLS struct {
	// CA is a PEM file of the CAs that sign the server's certificate;
	// default the system's.
	CA string `json:"ca,omitempty"`
	// Cert and Key are a client certificate and its key (PEM files),
	// both or neither.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	// SkipHostnameVerification checks the server's chain but not its name.
	SkipHostnameVerification bool `json:"skip_hostname_verification,omitempty"`
}

// validate names what is wrong with the Redis settings.
func (r *Redis) validate() error {
	if len(r.Addresses) == 0 {
		return errors.New("fleetlimit: redis: no address")
	}
	switch r.Mode {
	case "", "single", "cluster":
	case "sentinel":
		if r.Master == "" {
			return errors.New("fleetlimit: redis: sentinel mode needs master")
		}
	default:
		return fmt.Errorf("fleetlimit: redis: mode %q: want single, cluster or sentinel", r.Mode)
	}
	if r.DB < 0 {
		return fmt.Errorf("fleetlimit: redis: db %d: want 0 or more", r.DB)
	}
	if t := r.TLS; t != nil && (t.Cert == "") != (t.Key == "") {
		return errors.New("fleetlimit: redis: tls: cert and key go together")
	}
	return nil
}

// open connects for one zone, its keys under the handler's prefix and the
// zone's name.
func (r *Redis) open(ctx context.Context, zone string) (*redisstore.Store, error) {
	prefix := r.Prefix
	if prefix == "" {
		prefix = "fleetlimit:caddy:"
	}
	c := redisstore.Options{Addrs: r.Addresses, Mode: r.Mode, Master: r.Master, Username: r.Username,
		Password: r.Password, DB: r.DB, Prefix: prefix + zone + ":"}
	if t := r.TLS; t != nil {
		cfg, err := (redisstore.TLSFiles{CA: t.CA, Cert: t.Cert, Key: t.Key, SkipNameCheck: t.SkipHostnameVerification}).Config()
		if err != nil {
			return nil, fmt.Errorf("fleetlimit: redis: tls: %w", err)
		}
		c.TLS = cfg
	}
	return redisstore.New(ctx, c)
}
