package rls

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// Settings are fleetlimit's own settings, from the optional top-level
// "fleetlimit" section (envoyproxy/ratelimit files work without it), which
// flags and environment variables override (see cmd/fleetlimit serve).
type Settings struct {
	Design     string      `yaml:"design"`      // default design.Default (permit)
	WindowKind window.Kind `yaml:"window_kind"` // fixed (default), as envoyproxy/ratelimit, or sliding
	// WindowBuckets, when > 0, counts every limit's window in that many
	// counters instead of the exact log (limiter.Config.WindowBuckets): a
	// sliding window in B buckets of unit/B, a fixed one (B = 1) in one.
	WindowBuckets int           `yaml:"window_buckets"`
	Sync          time.Duration `yaml:"sync"`     // default 1s
	Gateways      int           `yaml:"gateways"` // K, default 1
	Gateway       int           `yaml:"gateway"`  // this process's index
	// Membership learns K and this process's index from Redis instead of
	// gateways and gateway (limiter.Config.Membership).
	Membership bool          `yaml:"membership"`
	Timeout    time.Duration `yaml:"timeout"` // store timeout, default 50ms
	// FailClosed rejects while the store is unreachable instead of
	// falling back to each gateway's share (limiter.Config.FailClosed).
	FailClosed bool `yaml:"fail_closed"`
	// ResponseHeaders adds rate limit headers to responses
	// (LIMIT_RESPONSE_HEADERS_ENABLED), in the Headers style.
	ResponseHeaders bool        `yaml:"response_headers"`
	Headers         HeaderStyle `yaml:"headers"` // draft (default) or legacy
	// The legacy style's header names (LIMIT_LIMIT_HEADER,
	// LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER); default
	// RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset.
	LimitHeader     string  `yaml:"limit_header"`
	RemainingHeader string  `yaml:"remaining_header"` // the legacy style's remaining header (LIMIT_REMAINING_HEADER)
	ResetHeader     string  `yaml:"reset_header"`     // the legacy style's reset header (LIMIT_RESET_HEADER)
	NearRatio       float64 `yaml:"near_ratio"`       // "near" metric threshold, default 0.8 (NEAR_LIMIT_RATIO)
	// ShadowMode answers OK to every request, counting as usual
	// (SHADOW_MODE).
	ShadowMode bool `yaml:"shadow_mode"`
	// QuotaMode makes every limit a quota (QUOTA_MODE).
	QuotaMode bool `yaml:"quota_mode"`
	// DynamicMetadata returns the request and the passed limits' metadata
	// in the response's dynamic metadata (RESPONSE_DYNAMIC_METADATA).
	DynamicMetadata bool `yaml:"response_dynamic_metadata"`
	// StopIncrement, with central-counter, does not count a request
	// against its other limits when one of them would go over
	// (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT).
	StopIncrement bool `yaml:"stop_increment_over_limit"`
	// CacheKeyPrefix starts central-counter's Redis keys, as
	// envoyproxy/ratelimit's CACHE_KEY_PREFIX.
	CacheKeyPrefix string `yaml:"cache_key_prefix"`
	// Fleet names the fleet whose gateway indexes this process claims on
	// Redis; default "default". Fleets sharing one Redis need their own.
	Fleet string `yaml:"fleet"`
	// ClaimTTL is how long a claim of a gateway index lasts unless
	// renewed; default 10s.
	ClaimTTL time.Duration `yaml:"claim_ttl"`
	// MaxKeys bounds the keys this process holds; default 100,000 (see
	// limiter.Config.MaxKeys for the eviction rule).
	MaxKeys int `yaml:"max_keys"`
	// MaxKeyBytes bounds the bytes of their names together; default 64
	// MiB (limiter.Config.MaxKeyBytes).
	MaxKeyBytes int `yaml:"max_key_bytes"`
	// FailAfter is how many store calls on the request path must fail in
	// a row before every request falls back at once; default 3
	// (limiter.Config.FailAfter).
	FailAfter int `yaml:"fail_after"`
}

// HeaderStyle is the form of the rate limit response headers.
type HeaderStyle string

// The header styles.
const (
	// HeadersDraft: RateLimit-Policy and RateLimit, as structured fields of
	// the IETF httpapi draft (-07 onwards), e.g. `"name";q=100;w=60` and
	// `"name";r=50;t=30`.
	HeadersDraft HeaderStyle = "draft"
	// HeadersLegacy: the trio RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (draft -06 and envoyproxy/ratelimit), names settable.
	HeadersLegacy HeaderStyle = "legacy"
)

// Limiter is the limiter configuration these settings ask for, on store st
// (nil: the embedded store): the one place the service's settings become
// the limiter's.
func (s Settings) Limiter(st store.Backend, log *slog.Logger) limiter.Config {
	return limiter.Config{Design: s.Design, WindowKind: s.WindowKind, WindowBuckets: s.WindowBuckets, Sync: s.Sync, Gateways: s.Gateways,
		Gateway: s.Gateway, Membership: s.Membership, Store: st, Timeout: s.Timeout, FailClosed: s.FailClosed, Logger: log, Fleet: s.Fleet, ClaimTTL: s.ClaimTTL, MaxKeys: s.MaxKeys,
		MaxKeyBytes: s.MaxKeyBytes, FailAfter: s.FailAfter}
}

// Bounds on the fleetlimit settings: a sync far below 10 ms only burns CPU
// (1 ns kept an idle serve at 116%), and each gateway of a fleet costs every
// key a counter in several designs.
const (
	MinSync     = 10 * time.Millisecond
	MaxSync     = time.Hour
	MaxGateways = 4096
	MaxTimeout  = 10 * time.Second
	MaxKeys     = 100_000_000
)

func (p parser) settings(v *yaml.Node, s *Settings) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v, "fleetlimit must be a mapping")
	}
	known := map[string]bool{}
	t := reflect.TypeFor[Settings]()
	for i := range t.NumField() {
		known[t.Field(i).Tag.Get("yaml")] = true
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if !known[v.Content[i].Value] {
			return p.errf(v.Content[i], "unknown fleetlimit setting %q", v.Content[i].Value)
		}
	}
	if err := v.Decode(s); err != nil {
		return &ConfigError{p.file, v.Line, "fleetlimit settings: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return nil
}

// DefaultSettings are the settings of a configuration that sets none.
func DefaultSettings() Settings {
	return Settings{Design: design.Default, WindowKind: window.Fixed, Sync: time.Second, Gateways: 1,
		Timeout: 50 * time.Millisecond, NearRatio: 0.8, Headers: HeadersDraft}
}

// Validate reports the first thing wrong with the settings.
func (s Settings) Validate() error { return s.validate("") }

func (s Settings) validate(file string) error {
	bad := func(msg string) error { return &ConfigError{File: file, Msg: "fleetlimit settings: " + msg} }
	_, err := design.Lookup(s.Design)
	if err != nil {
		return bad(err.Error())
	}
	if s.WindowKind != window.Fixed && s.WindowKind != window.Sliding {
		return bad(fmt.Sprintf("window_kind %v: want sliding or fixed", s.WindowKind))
	}
	if err := (window.Spec{Size: time.Second, Kind: s.WindowKind, Buckets: s.WindowBuckets}).Validate(); err != nil {
		return bad(strings.Replace(err.Error(), "window buckets", "window_buckets", 1))
	}
	switch {
	case s.Sync < MinSync || s.Sync > MaxSync:
		return bad(fmt.Sprintf("sync %v: want from %v to %v", s.Sync, MinSync, MaxSync))
	case s.Gateways < 1 || s.Gateways > MaxGateways:
		return bad(fmt.Sprintf("gateways %d: want 1 to %d", s.Gateways, MaxGateways))
	case s.Gateway < 0 || s.Gateway >= s.Gateways:
		return bad(fmt.Sprintf("gateway %d of %d: want 0 <= gateway < gateways", s.Gateway, s.Gateways))
	case s.Membership && (s.Gateways != 1 || s.Gateway != 0):
		return bad("membership learns the fleet's size and this process's index from Redis: leave gateways and gateway unset")
	case s.Timeout <= 0 || s.Timeout > MaxTimeout:
		return bad(fmt.Sprintf("timeout %v: want a positive duration of at most %v", s.Timeout, MaxTimeout))
	case s.NearRatio <= 0 || s.NearRatio > 1:
		return bad("near_ratio must be in (0, 1]")
	case s.ClaimTTL < 0 || (s.ClaimTTL > 0 && s.ClaimTTL < 100*time.Millisecond) || s.ClaimTTL > time.Hour:
		return bad(fmt.Sprintf("claim_ttl %v: want from 100ms to 1h", s.ClaimTTL))
	case s.MaxKeys < 0 || s.MaxKeys > MaxKeys:
		return bad(fmt.Sprintf("max_keys %d: want 1 to %d (0: the default, 100,000)", s.MaxKeys, MaxKeys))
	case s.MaxKeyBytes != 0 && (s.MaxKeyBytes < 1<<20 || s.MaxKeyBytes > 1<<34):
		return bad(fmt.Sprintf("max_key_bytes %d: want 1 MiB (1048576) to 16 GiB (0: the default, 64 MiB)", s.MaxKeyBytes))
	case s.FailAfter < 0 || s.FailAfter > 1000:
		return bad(fmt.Sprintf("fail_after %d: want 1 to 1000 (0: the default, 3)", s.FailAfter))
	case s.Headers != HeadersDraft && s.Headers != HeadersLegacy:
		return bad(fmt.Sprintf("headers %q: want draft or legacy", s.Headers))
	case s.StopIncrement && s.Design != "central-counter":
		return bad("stop_increment_over_limit (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT) applies to design central-counter only: " +
			"fleetlimit's other designs never count a rejected request against the limit that rejected it, and do count it against its other limits")
	}
	if info, _ := design.Lookup(s.Design); info.FixedWindow && s.WindowKind != window.Fixed {
		return bad(fmt.Sprintf("design %s counts in fixed windows only: window_kind must be fixed", s.Design))
	}
	for _, h := range []string{s.LimitHeader, s.RemainingHeader, s.ResetHeader} {
		if h != "" && !httpguts.ValidHeaderFieldName(h) {
			return bad(fmt.Sprintf("header name %q is not a valid HTTP field name", h))
		}
	}
	return nil
}
