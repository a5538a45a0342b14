package redisstore

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseURL reads a Redis address as envoyproxy/ratelimit's REDIS_URL,
// REDIS_TYPE and REDIS_SOCKET_TYPE give it: one address for mode single
// (host:port, redis://[user:password@]host:port[/db], rediss://... for
// TLS, or with network "unix" a socket path or unix:///path), the seed
// nodes separated by commas for cluster, and for sentinel the master's
// name followed by the Sentinels ("mymaster,host1:26379,host2:26379").
// rediss:// sets Options.TLS to an empty config, which the caller completes.
func ParseURL(addr, mode, network string) (Options, error) {
	c := Options{Mode: strings.ToLower(mode), Network: strings.ToLower(network)}
	switch c.Network {
	case "":
		c.Network = "tcp"
	case "tcp", "unix":
	default:
		return Options{}, fmt.Errorf("redis socket type %q: want tcp or unix", network)
	}
	parts := strings.Split(addr, ",")
	switch c.Mode {
	case "", "single":
		c.Mode = "single"
	case "cluster":
	case "sentinel":
		if len(parts) < 2 || parts[0] == "" {
			return Options{}, fmt.Errorf("redis sentinel address %q: want <master name>,<sentinel1>,...,<sentinelN>", addr)
		}
		c.Master, parts = parts[0], parts[1:]
	default:
		return Options{}, fmt.Errorf("redis type %q: want single, cluster or sentinel", mode)
	}
	if c.Network == "unix" && (c.Mode != "single" || len(parts) != 1) {
		return Options{}, fmt.Errorf("redis address %q: a unix socket is one path, in single mode", addr)
	}
	for _, p := range parts {
		if err := c.addNode(strings.TrimSpace(p)); err != nil {
			return Options{}, err
		}
	}
	return c, nil
}

// addNode adds one address, taking the credentials, database and TLS of a
// URL form.
func (c *Options) addNode(p string) error {
	if p == "" {
		return fmt.Errorf("redis address: an empty node")
	}
	if c.Network == "unix" {
		c.Addrs = append(c.Addrs, strings.TrimPrefix(p, "unix://"))
		return nil
	}
	if !strings.Contains(p, "://") {
		c.Addrs = append(c.Addrs, p)
		return nil
	}
	u, err := url.Parse(p)
	if err != nil {
		return fmt.Errorf("redis address: %v", redact(err))
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		if c.TLS == nil {
			c.TLS = defaultTLS()
		}
	case "unix":
		if c.Mode != "single" {
			return fmt.Errorf("redis address: a unix socket is one path, in single mode")
		}
		c.Network = "unix"
		c.Addrs = append(c.Addrs, u.Path)
		return nil
	default:
		return fmt.Errorf("redis address scheme %q: want redis, rediss or unix", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("redis address %s: no host", u.Redacted())
	}
	c.Addrs = append(c.Addrs, u.Host)
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
		if _, has := u.User.Password(); !has { // redis://password@host
			c.Username, c.Password = "", u.User.Username()
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return fmt.Errorf("redis address %s: database %q is not a number", u.Redacted(), db)
		}
		c.DB = n
	}
	return nil
}

// redact keeps a URL parse error from repeating a password.
func redact(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}
