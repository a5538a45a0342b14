// Package policy is what fleetlimit's enforcement points share: named
// limits (a burst limit beside a sustained one) and their encoding in the
// IETF httpapi RateLimit header fields (draft -07 and later),
// RateLimit-Policy: "name";q=100;w=60 and RateLimit: "name";r=50;t=30,
// which the HTTP middleware, the gRPC interceptors, the Envoy rate limit
// service and the Caddy module all send. It encodes and never decides: no
// Limiter call, no I/O.
package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// Policy is a named limit.
type Policy struct {
	Name string // its name in the headers, e.g. "burst"
	limiter.Limit
}

// Set is several named limits, checked and encoded once, for a request
// path that decides under all of them at every request.
type Set struct {
	policies []Policy
	limits   []limiter.Limit
	header   string
}

// NewSet checks ps and encodes their RateLimit-Policy list: every limit
// valid, and no two of one name (as the headers write it), which the
// headers could not tell apart.
func NewSet(ps []Policy) (*Set, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("policy: no limits")
	}
	seen := map[string]bool{}
	s := &Set{policies: append([]Policy(nil), ps...), limits: make([]limiter.Limit, len(ps))}
	items := make([]string, len(ps))
	for i, p := range ps {
		switch {
		case p.Requests < 1:
			return nil, fmt.Errorf("policy %s: %d requests: must be at least 1", sfString(p.Name), p.Requests)
		case p.Window <= 0:
			return nil, fmt.Errorf("policy %s: window %v: must be positive", sfString(p.Name), p.Window)
		case p.Buckets < 0:
			return nil, fmt.Errorf("policy %s: %d buckets: must not be negative", sfString(p.Name), p.Buckets)
		}
		name := sfString(p.Name)
		if seen[name] {
			return nil, fmt.Errorf("policy: two limits are named %s: the headers could not tell them apart", name)
		}
		seen[name] = true
		s.limits[i] = p.Limit
		items[i] = PolicyField(p.Name, uint64(p.Requests), Seconds(p.Window))
	}
	s.header = strings.Join(items, ", ")
	return s, nil
}

// Limits returns the limits, in order, for limiter.AllowLimits. The slice
// is the Set's: do not change it.
func (s *Set) Limits() []limiter.Limit { return s.limits }

// Name returns the name of limit i.
func (s *Set) Name(i int) string { return s.policies[i].Name }

// Header returns the RateLimit-Policy list of every limit, e.g.
// "burst";q=10;w=1, "daily";q=250;w=86400.
func (s *Set) Header() string { return s.header }

// Seconds is d in whole seconds, rounded up: the headers' unit.
func Seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

// PolicyField is a RateLimit-Policy item: the policy's name, its quota q
// and its window w in seconds, e.g. "default";q=100;w=60.
func PolicyField(name string, quota uint64, window int64) string {
	return field(name, ";q=", quota, ";w=", window)
}

// LimitField is a RateLimit item: the policy's name, what remains r and
// the seconds t until the quota resets, e.g. "default";r=50;t=30.
func LimitField(name string, remaining uint64, reset int64) string {
	return field(name, ";r=", remaining, ";t=", reset)
}

// Fields are the RateLimit-Policy and RateLimit values of a decision under
// one limit named name.
func Fields(name string, d limiter.Decision) (policy, limit string) {
	return PolicyField(name, uint64(d.Limit), Seconds(d.Window)), LimitField(name, uint64(max(d.Remaining, 0)), Seconds(d.Reset))
}

// Fields are the RateLimit-Policy and RateLimit values of a decision under
// the Set's limits: every limit's policy, and what is left of the one that
// binds (limiter.Decision.Bound).
func (s *Set) Fields(d limiter.Decision) (policy, limit string) {
	return s.header, LimitField(s.policies[d.Bound].Name, uint64(max(d.Remaining, 0)), Seconds(d.Reset))
}

// RetryAfter is the Retry-After value of a rejected decision: whole
// seconds, at least 1.
func RetryAfter(d limiter.Decision) string {
	return strconv.FormatInt(max(Seconds(d.RetryAfter), 1), 10)
}

// field is a draft item, name;a=x;b=y, made in one allocation: one is on
// every response.
func field(name, a string, x uint64, b string, y int64) string {
	var buf [96]byte
	f := appendSF(buf[:0], name)
	f = strconv.AppendUint(append(f, a...), x, 10)
	f = strconv.AppendInt(append(f, b...), y, 10)
	return string(f)
}

// sfString is s as a structured-field string (RFC 8941): quoted, with
// quotes and backslashes escaped and characters outside printable ASCII
// dropped; an empty name is "default".
func sfString(s string) string { return string(appendSF(nil, s)) }

// appendSF appends sfString(s) to b. It reads bytes: every byte of a
// character outside ASCII is outside printable ASCII, and dropped.
func appendSF(b []byte, s string) []byte {
	b = append(b, '"')
	start := len(b)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20 && c < 0x7f:
			b = append(b, c)
		}
	}
	if len(b) == start {
		b = append(b, "default"...)
	}
	return append(b, '"')
}
