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
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
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
	// Headers is the style of the rate limit headers; default DraftHeaders.
	Headers HeaderStyle
	// Policy names the limit in the draft's headers; default "default".
	Policy string
	// Limits, when set, decide every request under several limits at
	// once (a burst limit and a sustained one: limiter.AllowLimits),
	// instead of the Limiter's default limit: a request is admitted only
	// if every one admits it. RateLimit-Policy then lists them all, and
	// RateLimit (or the legacy headers) describes the one that binds.
	// Their names must differ.
	Limits []policy.Policy
	// Legacy names the legacy style's three headers; a "" keeps its
	// default name (RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset).
	Legacy LegacyNames
}

// HeaderStyle is the form of the rate limit headers.
type HeaderStyle int

// The header styles.
const (
	// DraftHeaders: RateLimit-Policy: "name";q=100;w=60 and
	// RateLimit: "name";r=50;t=30.
	DraftHeaders HeaderStyle = iota
	// LegacyHeaders: RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (draft -06, and envoyproxy/ratelimit's defaults).
	LegacyHeaders
	// NoHeaders sets none but Retry-After.
	NoHeaders
)

// LegacyNames are the names of the legacy style's headers.
type LegacyNames struct{ Limit, Remaining, Reset string }

// middleware is a checked Options with what every request needs made once.
type middleware struct {
	Options
	l   *limiter.Limiter
	set *policy.Set // nil under the Limiter's default limit
}

// New returns middleware that limits requests with l, or what is wrong
// with opt: an unknown header style, a header name that is not a token,
// limits of one name or an invalid limit.
func New(l *limiter.Limiter, opt Options) (func(http.Handler) http.Handler, error) {
	m, err := newMiddleware(l, opt)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}, nil
}

// newMiddleware checks opt and fills its defaults.
func newMiddleware(l *limiter.Limiter, opt Options) (*middleware, error) {
	if l == nil {
		return nil, fmt.Errorf("httpmw: no Limiter")
	}
	if opt.Headers < DraftHeaders || opt.Headers > NoHeaders {
		return nil, fmt.Errorf("httpmw: header style %d: want DraftHeaders, LegacyHeaders or NoHeaders", opt.Headers)
	}
	for _, h := range []string{opt.Legacy.Limit, opt.Legacy.Remaining, opt.Legacy.Reset} {
		if h != "" && !validHeaderName(h) {
			return nil, fmt.Errorf("httpmw: legacy header name %q: not an HTTP token", h)
		}
	}
	m := &middleware{Options: opt, l: l}
	if len(opt.Limits) > 0 {
		set, err := policy.NewSet(opt.Limits)
		if err != nil {
			return nil, fmt.Errorf("httpmw: %w", err)
		}
		m.set = set
	}
	if m.Key == nil {
		m.Key = ClientIP()
	}
	if m.Rejected == nil {
		m.Rejected = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		})
	}
	m.Policy = cmp.Or(m.Policy, "default")
	m.Legacy = LegacyNames{cmp.Or(m.Legacy.Limit, "RateLimit-Limit"), cmp.Or(m.Legacy.Remaining, "RateLimit-Remaining"), cmp.Or(m.Legacy.Reset, "RateLimit-Reset")}
	return m, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return s != ""
}

// serve decides r and either answers it or hands it to next.
func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	n := 1
	if m.Cost != nil {
		n = m.Cost(r)
	}
	d, err := m.allow(r, n)
	if errors.Is(err, limiter.ErrClosed) { // the server is shutting down or reloading
		w.Header().Set("Retry-After", "1")
		http.Error(w, "httpmw: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err != nil { // a Cost below 1: the caller's bug, never a silent admit
		http.Error(w, "httpmw: "+err.Error(), http.StatusInternalServerError)
		return
	}
	m.setHeaders(w.Header(), d)
	if !d.Allowed {
		m.Rejected.ServeHTTP(w, r)
		return
	}
	next.ServeHTTP(w, r)
}

// allow decides r, of cost n, under the default limit or the Set's.
func (m *middleware) allow(r *http.Request, n int) (limiter.Decision, error) {
	if m.set == nil {
		return m.l.AllowN(r.Context(), m.Key(r), n)
	}
	return m.l.AllowLimits(r.Context(), m.Key(r), m.set.Limits(), n)
}

// SetHeaders sets the draft's RateLimit-Policy and RateLimit headers of a
// decision under the policy name "default", and Retry-After when it was
// rejected.
func SetHeaders(h http.Header, d limiter.Decision) {
	(&middleware{Options: Options{Policy: "default"}}).setHeaders(h, d)
}

// setHeaders sets the headers of a decision in m's style.
func (m *middleware) setHeaders(h http.Header, d limiter.Decision) {
	switch m.Headers {
	case DraftHeaders:
		v := make([]string, 2) // one allocation for both headers
		if m.set != nil {
			v[0], v[1] = m.set.Fields(d)
		} else {
			v[0], v[1] = policy.Fields(m.Policy, d)
		}
		h[policyHeader], h[limitHeader] = v[:1:1], v[1:] // h.Set's canonical keys, without making them each time
	case LegacyHeaders:
		n := m.Legacy
		h.Set(n.Limit, strconv.Itoa(d.Limit))
		h.Set(n.Remaining, strconv.Itoa(d.Remaining))
		h.Set(n.Reset, strconv.FormatInt(policy.Seconds(d.Reset), 10))
	}
	if !d.Allowed {
		h.Set("Retry-After", policy.RetryAfter(d))
	}
}

// The draft's headers, in the canonical form http.Header keeps.
const (
	policyHeader = "Ratelimit-Policy"
	limitHeader  = "Ratelimit"
)
