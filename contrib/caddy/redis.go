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
	return nil
}

// open connects for one zone, its keys under the handler's prefix and the
// zone's name.
func (r *Redis) open(ctx context.Context, zone string) (*redisstore.Store, error) {
	prefix := r.Prefix
	if prefix == "" {
		prefix = "fleetlimit:caddy:"
	}
	c := redisstore.Conn{Addrs: r.Addresses, Mode: r.Mode, Master: r.Master, Username: r.Username,
		Password: r.Password, DB: r.DB}
	return redisstore.Open(ctx, c, redisstore.Options{Prefix: prefix + zone + ":"})
}
