// Package httpmw is net/http middleware that rate-limits requests with a
// fleetlimit Limiter: it answers 429 Too Many Requests with Retry-After when
// a request is over the limit, and sets rate limit headers on every
// response: by default RateLimit-Policy and RateLimit, the structured fields
// of the IETF httpapi draft (-07 and later), or the legacy trio
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, under names of
// the caller's choosing.
//
// It decides from the request alone and never reads the body.
package httpmw

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// KeyFunc names the rate-limited key of a request.
type KeyFunc func(*http.Request) string

// Header keys requests by the value of a header, such as an API key; all
// requests without it share the key "".
func Header(name string) KeyFunc {
	name = textproto.CanonicalMIMEHeaderKey(name) // once, not at every request
	return func(r *http.Request) string {
		if v := r.Header[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// ClientIP keys requests by the connection's remote IP address. It does not
// trust X-Forwarded-For: behind a proxy, key by a header the proxy sets.
func ClientIP() KeyFunc {
	return func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
}

// Options configure the middleware.
type Options struct {
	// Key names a request's key; default ClientIP().
	Key KeyFunc
	// Cost is a request's cost, at least 1; default 1. A cost below 1 is
	// answered 500 Internal Server Error and never reaches the handler.
	Cost func(*http.Request) int
	// Rejected writes the response to a request over the limit, after
	// the headers are set; default a plain-text 429.
	Rejected http.Handler
	// Headers is the style of the rate limit headers; default Draft.
	Headers HeaderStyle
	// Policy names the limit in the draft's headers; default "default".
	Policy string
	// Limits, when set, decide every request under several limits at
	// once (a burst limit and a sustained one: limiter.AllowLimits),
	// instead of the Limiter's default limit: a request is admitted only
	// if every one admits it. RateLimit-Policy then lists them all, and
	// RateLimit (or the legacy headers) describes the one that binds.
	// Their names must differ.
	Limits []Policy
	// Legacy names the legacy style's three headers; a "" keeps its
	// default name (RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset).
	Legacy LegacyNames
}

// HeaderStyle is the form of the rate limit headers.
type HeaderStyle int

// The header styles.
const (
	// Draft: RateLimit-Policy: "name";q=100;w=60 and
	// RateLimit: "name";r=50;t=30.
	Draft HeaderStyle = iota
	// Legacy: RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
	// (draft -06, and envoyproxy/ratelimit's defaults).
	Legacy
	// NoHeaders sets none but Retry-After.
	NoHeaders
)

// Policy is a named limit of Options.Limits.
type Policy struct {
	Name string // its name in the headers, e.g. "burst"
	limiter.Limit
}

// LegacyNames are the names of the legacy style's headers.
type LegacyNames struct{ Limit, Remaining, Reset string }

// New returns middleware that limits requests with l.
func New(l *limiter.Limiter, opt Options) func(http.Handler) http.Handler {
	if opt.Key == nil {
		opt.Key = ClientIP()
	}
	if opt.Rejected == nil {
		opt.Rejected = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		})
	}
	bad := opt.check()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if bad != nil { // the caller's bug: never a silent admit
				http.Error(w, "httpmw: "+bad.Error(), http.StatusInternalServerError)
				return
			}
			n := 1
			if opt.Cost != nil {
				n = opt.Cost(r)
			}
			d, err := opt.allow(l, r, n)
			if err != nil { // a Cost below 1: the caller's bug, never a silent admit
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			opt.setHeaders(w.Header(), d)
			if !d.Allowed {
				opt.Rejected.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// check reports what is wrong with opt's Limits (CheckPolicies).
func (opt Options) check() error { return CheckPolicies(opt.Limits) }

// CheckPolicies reports what is wrong with several named limits: two of
// one name, which the headers could not tell apart.
func CheckPolicies(ps []Policy) error {
	seen := map[string]bool{}
	for _, p := range ps {
		name := sfString(p.Name)
		if seen[name] {
			return fmt.Errorf("two limits are named %s: the headers could not tell them apart", name)
		}
		seen[name] = true
	}
	return nil
}

// Limits are the limiter's limits of several named ones.
func Limits(ps []Policy) []limiter.Limit {
	lims := make([]limiter.Limit, len(ps))
	for i, p := range ps {
		lims[i] = p.Limit
	}
	return lims
}

// allow decides r, of cost n, under the default limit or opt.Limits.
func (opt Options) allow(l *limiter.Limiter, r *http.Request, n int) (limiter.Decision, error) {
	if len(opt.Limits) == 0 {
		return l.AllowN(r.Context(), opt.Key(r), n)
	}
	return l.AllowLimits(r.Context(), opt.Key(r), Limits(opt.Limits), n)
}

// seconds rounds a duration up to whole seconds, at least min.
func seconds(d time.Duration, min int) string {
	s := int(math.Ceil(d.Seconds()))
	if s < min {
		s = min
	}
	return strconv.Itoa(s)
}

// SetHeaders sets the draft's RateLimit-Policy and RateLimit headers of a
// decision under the policy name "default", and Retry-After when it was
// rejected.
func SetHeaders(h http.Header, d limiter.Decision) { Options{}.setHeaders(h, d) }

// setHeaders sets the headers of a decision in opt's style.
func (opt Options) setHeaders(h http.Header, d limiter.Decision) {
	reset := int64(math.Ceil(d.Reset.Seconds()))
	switch opt.Headers {
	case Draft:
		name, v := cmp.Or(opt.Policy, "default"), make([]string, 2) // one allocation for both headers
		if len(opt.Limits) > 0 {
			name = opt.Limits[d.Bound].Name
			v[0] = Policies(opt.Limits)
		} else {
			v[0] = PolicyField(name, uint64(d.Limit), int64(math.Ceil(d.Window.Seconds())))
		}
		v[1] = LimitField(name, uint64(max(d.Remaining, 0)), reset)
		h[policyHeader], h[limitHeader] = v[:1:1], v[1:] // h.Set's canonical keys, without making them each time
	case Legacy:
		n := opt.Legacy
		h.Set(cmp.Or(n.Limit, "RateLimit-Limit"), strconv.Itoa(d.Limit))
		h.Set(cmp.Or(n.Remaining, "RateLimit-Remaining"), strconv.Itoa(d.Remaining))
		h.Set(cmp.Or(n.Reset, "RateLimit-Reset"), strconv.FormatInt(reset, 10))
	}
	if !d.Allowed {
		h.Set("Retry-After", seconds(d.RetryAfter, 1))
	}
}

// The draft's headers, in the canonical form http.Header keeps.
const (
	policyHeader = "Ratelimit-Policy"
	limitHeader  = "Ratelimit"
)

// Policies is the RateLimit-Policy list of several named limits, e.g.
// "burst";q=10;w=1, "daily";q=250;w=86400.
func Policies(ps []Policy) string {
	items := make([]string, len(ps))
	for i, p := range ps {
		items[i] = PolicyField(p.Name, uint64(p.Requests), int64(math.Ceil(p.Window.Seconds())))
	}
	return strings.Join(items, ", ")
}

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
