// Package rls is an Envoy-compatible rate limit service on top of the
// fleetlimit limiter: the envoy.service.ratelimit.v3 gRPC API, the JSON API
// of envoyproxy/ratelimit, and its YAML configuration format, unchanged.
//
// It must never accept a configuration it cannot apply exactly as
// envoyproxy/ratelimit documents it, and never drop requests on a reload.
package rls

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
)

// Unit is a rate limit unit, numbered as in envoy.service.ratelimit.v3.
type Unit int32

// The units of envoyproxy/ratelimit.
const (
	Second Unit = 1
	Minute Unit = 2
	Hour   Unit = 3
	Day    Unit = 4
	Month  Unit = 5
	Year   Unit = 6
	Week   Unit = 7
)

var unitNames = map[string]Unit{"SECOND": Second, "MINUTE": Minute, "HOUR": Hour, "DAY": Day, "WEEK": Week, "MONTH": Month, "YEAR": Year}

// Duration is the unit's length: a month is 30 days and a year 365, as in
// envoyproxy/ratelimit.
func (u Unit) Duration() time.Duration {
	switch u {
	case Second:
		return time.Second
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	case Week:
		return 7 * 24 * time.Hour
	case Month:
		return 30 * 24 * time.Hour
	case Year:
		return 365 * 24 * time.Hour
	}
	return 0
}

// String returns the unit's name, e.g. "MINUTE".
func (u Unit) String() string {
	if u >= Second && u <= Week {
		return [...]string{"SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"}[u-Second]
	}
	return "UNKNOWN"
}

// RateLimit is a configured limit.
type RateLimit struct {
	RequestsPerUnit uint32
	Unit            Unit
	// UnitMultiplier makes the window UnitMultiplier units long (0 and 1:
	// one unit): RLS v3's RateLimitOverride.unit_multiplier, and a
	// fleetlimit extension in YAML; envoyproxy/ratelimit ignores it.
	UnitMultiplier uint32
	Unlimited      bool
	Name           string
	Replaces       []string
	ShadowMode     bool
	DetailedMetric bool
	// QuotaMode makes the limit a quota: over it, the request is over the
	// limit only when every quota limit of the request is.
	QuotaMode bool
	// Metadata is the descriptor's metadata, returned in the response's
	// dynamic metadata when the request passes it (RESPONSE_DYNAMIC_METADATA).
	Metadata *structpb.Struct
	// FullKey names the limit in metrics: domain.key_value.key...
	FullKey string
	// Also are further limits on the same descriptor, from a rate_limits
	// list (a fleetlimit extension: its first entry is this limit, the
	// others these): a request is admitted only if every one admits it,
	// and counted against them only when it is. Each has its own
	// RequestsPerUnit, Unit, UnitMultiplier and Name, and nothing else.
	Also []*RateLimit
}

// Part returns the i-th of the descriptor's limits: the limit itself, then
// Also.
func (r *RateLimit) Part(i int) *RateLimit {
	if i == 0 {
		return r
	}
	return r.Also[i-1]
}

// node is one level of a domain's descriptor tree.
type node struct {
	children  map[string]*node // by "key" or "key_value"
	wildcards []wildcard       // children keys holding '*', in file order
	limit     *RateLimit
	// valueToMetric puts the request's value into the metric name.
	valueToMetric bool
	// shareThreshold: every value matching this wildcard child shares one
	// counter, named by the pattern.
	shareThreshold bool
}

// wildcard is a child key with '*' in its value, split at each '*': each
// '*' matches any run of characters, the empty one included.
type wildcard struct {
	key   string
	parts []string
}

// matches reports whether kv ("key_value") matches the pattern.
func (w wildcard) matches(kv string) bool {
	p := w.parts
	first, last := p[0], p[len(p)-1]
	if len(kv) < len(first)+len(last) || !strings.HasPrefix(kv, first) || !strings.HasSuffix(kv, last) {
		return false
	}
	mid := kv[len(first) : len(kv)-len(last)]
	for _, part := range p[1 : len(p)-1] {
		i := strings.Index(mid, part)
		if i < 0 {
			return false
		}
		mid = mid[i+len(part):]
	}
	return true
}

// Config is a loaded configuration: one or more domains and the settings.
type Config struct {
	// Settings are the settings in force (a caller may override some,
	// as serve's flags do).
	Settings Settings
	// FileSettings are the settings as the file gave them.
	FileSettings Settings
	domains      map[string]*node
	// Source names the file, for errors and logs.
	Source string
	digest [32]byte // of the bytes parsed, to tell a changed file
}

// Limits returns every configured limit, sorted by FullKey.
func (c *Config) Limits() []*RateLimit {
	var out []*RateLimit
	var walk func(n *node)
	walk = func(n *node) {
		if n.limit != nil {
			out = append(out, n.limit)
		}
		for _, ch := range n.children {
			walk(ch)
		}
	}
	for _, d := range c.domains {
		walk(d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullKey < out[j].FullKey })
	return out
}

// String describes the limit as serve enforces it, e.g. "100 per MINUTE,
// shadow mode".
func (r *RateLimit) String() string {
	var b strings.Builder
	if r.Unlimited {
		b.WriteString("unlimited")
	} else {
		r.writeRate(&b)
	}
	for _, a := range r.Also {
		b.WriteString(" and ")
		a.writeRate(&b)
	}
	if len(r.Replaces) > 0 {
		fmt.Fprintf(&b, ", replaces %s", strings.Join(r.Replaces, ", "))
	}
	if r.ShadowMode {
		b.WriteString(", shadow mode")
	}
	if r.DetailedMetric {
		b.WriteString(", detailed metric")
	}
	if r.QuotaMode {
		b.WriteString(", quota mode")
	}
	if r.Metadata != nil {
		b.WriteString(", metadata")
	}
	return b.String()
}

// writeRate writes the limit's rate and name, e.g. 10 per SECOND, name
// "burst".
func (r *RateLimit) writeRate(b *strings.Builder) {
	fmt.Fprintf(b, "%d per %v", r.RequestsPerUnit, r.Unit)
	if r.UnitMultiplier > 1 {
		fmt.Fprintf(b, " × %d (%v)", r.UnitMultiplier, r.Window())
	}
	if r.Name != "" {
		fmt.Fprintf(b, ", name %q", r.Name)
	}
}

// Window is the limit's window: UnitMultiplier units.
func (r *RateLimit) Window() time.Duration {
	return r.Unit.Duration() * time.Duration(max(r.UnitMultiplier, 1))
}

// Enforceable reports what keeps c's limits from being enforced under set:
// several limits on one descriptor (rate_limits) count in exact logs, and
// so not with window_buckets.
func (c *Config) Enforceable(set Settings) error {
	if set.WindowBuckets == 0 {
		return nil
	}
	for _, l := range c.Limits() {
		if len(l.Also) > 0 {
			return &ConfigError{File: c.Source, Msg: fmt.Sprintf("%s: several limits (rate_limits) count in exact logs, and window_buckets is %d: remove one or the other", l.FullKey, set.WindowBuckets)}
		}
	}
	return nil
}

// Domains returns the configured domain names.
func (c *Config) Domains() []string {
	var ds []string
	for d := range c.domains {
		ds = append(ds, d)
	}
	return ds
}

// ConfigError is a configuration problem with its place.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.File == "" {
		return e.Msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// validKeys are the keys of a limits file (ConfigKeys) outside the
// fleetlimit section.
var validKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range configKeys {
		m[k.Key] = true
	}
	return m
}()
