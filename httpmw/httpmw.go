// Package httpmw is net/http middleware that rate-limits requests with a
// fleetlimit Limiter: it answers 429 Too Many Requests with Retry-After when
// a request is over the limit, and sets the RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset headers on every response.
//
// It decides from the request alone and never reads the body.
package httpmw

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/fleetlimit/fleetlimit/limiter"
)

// KeyFunc names the rate-limited key of a request.
type KeyFunc func(*http.Request) string

// Header keys requests by the value of a header, such as an API key; all
// requests without it share the key "".
func Header(name string) KeyFunc {
	return func(r *http.Request) string { return r.Header.Get(name) }
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
}

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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := 1
			if opt.Cost != nil {
				n = opt.Cost(r)
			}
			d, err := l.AllowN(r.Context(), opt.Key(r), n)
			if err != nil { // a Cost below 1: the caller's bug, never a silent admit
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			SetHeaders(w.Header(), d)
			if !d.Allowed {
				opt.Rejected.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// seconds rounds a duration up to whole seconds, at least min.
func seconds(d time.Duration, min int) string {
	s := int(math.Ceil(d.Seconds()))
	if s < min {
		s = min
	}
	return strconv.Itoa(s)
}

// SetHeaders sets the RateLimit headers of a decision, and Retry-After when
// it was rejected.
func SetHeaders(h http.Header, d limiter.Decision) {
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", seconds(d.Reset, 0))
	if !d.Allowed {
		h.Set("Retry-After", seconds(d.RetryAfter, 1))
	}
}
