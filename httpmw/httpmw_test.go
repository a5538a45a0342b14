package httpmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
)

func newLimiter(t testing.TB, limit int) *limiter.Limiter {
	l, err := limiter.New(limiter.Config{Limit: limit, Window: time.Minute, Sync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })

func TestRejectsOverTheLimit(t *testing.T) {
	h := mw(t, newLimiter(t, 2), httpmw.Options{Key: httpmw.Header("X-API-Key")})(ok)
	codes := []int{}
	var last *httptest.ResponseRecorder
	for i := 0; i < 3; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		last = httptest.NewRecorder()
		h.ServeHTTP(last, r)
		codes = append(codes, last.Code)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("codes %v, want [200 200 429]", codes)
	}
	hd := last.Header()
	if hd.Get("RateLimit-Policy") != `"default";q=2;w=60` || hd.Get("RateLimit") != `"default";r=0;t=60` || hd.Get("Retry-After") != "60" ||
		hd.Get("RateLimit-Limit") != "" {
		t.Fatalf("headers %v", hd)
	}
	// Another key has its own budget.
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-API-Key", "bob")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Header().Get("Retry-After") != "" {
		t.Fatalf("bob: %d %v", w.Code, w.Header())
	}
}

func TestClientIPAndCost(t *testing.T) {
	h := mw(t, newLimiter(t, 5), httpmw.Options{Cost: func(*http.Request) int { return 3 }})(ok)
	for i, want := range []int{200, 429} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "192.0.2.7:5555"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Fatalf("request %d: %d, want %d", i, w.Code, want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.8:5555"
	if k := httpmw.ClientIP()(r); k != "192.0.2.8" {
		t.Fatalf("ClientIP = %q", k)
	}
}

func TestCustomRejection(t *testing.T) {
	h := mw(t, newLimiter(t, 1), httpmw.Options{Rejected: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})})(ok)
	var w *httptest.ResponseRecorder
	for i := 0; i < 2; i++ {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil).WithContext(context.Background()))
	}
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
}

func TestSeveralLimits(t *testing.T) {
	var now atomic.Int64
	now.Store(1_790_000_000_000_000_000)
	// One gateway of shared-counter counts exactly: the headers, not a
	// design, are under test.
	l, err := limiter.New(limiter.Config{Design: "shared-counter", Sync: time.Hour, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opt := httpmw.Options{Key: httpmw.Header("X-API-Key"), Limits: []policy.Policy{
		{Name: "burst", Limit: limiter.Limit{Requests: 2, Window: time.Second}},
		{Name: "minute", Limit: limiter.Limit{Requests: 3, Window: time.Minute}},
	}}
	h := mw(t, l, opt)(ok)
	get := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const policies = `"burst";q=2;w=1, "minute";q=3;w=60`
	for i, want := range []struct {
		code      int
		rateLimit string
	}{
		{200, `"burst";r=1;t=1`},   // both have room: the burst has less
		{200, `"burst";r=0;t=1`},   // the burst is spent
		{429, `"burst";r=0;t=1`},   // refused by the burst, spending nothing of the minute
		{200, `"minute";r=0;t=59`}, // a second later: the minute's third and last (its first frees 58.9 s on)
		{429, `"minute";r=0;t=59`}, // refused by the minute
	} {
		if i == 3 {
			now.Add(int64(1100 * time.Millisecond))
		}
		w := get()
		if w.Code != want.code || w.Header().Get("RateLimit") != want.rateLimit || w.Header().Get("RateLimit-Policy") != policies {
			t.Fatalf("request %d: %d %q %q, want %d %q %q", i+1, w.Code, w.Header().Get("RateLimit"), w.Header().Get("RateLimit-Policy"), want.code, want.rateLimit, policies)
		}
	}
}

// mw is the middleware of l and opt, which must be accepted.
func mw(t *testing.T, l *limiter.Limiter, opt httpmw.Options) func(http.Handler) http.Handler {
	t.Helper()
	m, err := httpmw.New(l, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A bad option is refused when the middleware is made, never answered 500
// at every request.
func TestBadOptionsAreRefusedAtConstruction(t *testing.T) {
	l := newLimiter(t, 5)
	burst := limiter.Limit{Requests: 2, Window: time.Second}
	for _, tc := range []struct {
		l    *limiter.Limiter
		opt  httpmw.Options
		want string
	}{
		{l, httpmw.Options{Limits: []policy.Policy{{Name: "a", Limit: burst}, {Name: "a", Limit: burst}}}, "two limits"},
		{l, httpmw.Options{Limits: []policy.Policy{{Name: "a", Limit: limiter.Limit{Requests: 0, Window: time.Second}}}}, "at least 1"},
		{l, httpmw.Options{Limits: []policy.Policy{{Name: "a", Limit: limiter.Limit{Requests: 2}}}}, "window"},
		{l, httpmw.Options{Headers: httpmw.HeaderStyle(7)}, "header style 7"},
		{l, httpmw.Options{Headers: httpmw.LegacyHeaders, Legacy: httpmw.LegacyNames{Reset: "X Reset"}}, "not an HTTP token"},
		{nil, httpmw.Options{}, "no Limiter"},
	} {
		if m, err := httpmw.New(tc.l, tc.opt); m != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want refused naming %q", tc.opt, err, tc.want)
		}
	}
}

// A request that reaches a limiter already closed (the server shutting
// down or reloading) is 503 with Retry-After, never a silent admit or a
// 500: nothing was counted, and the client may try again.
func TestClosedLimiterIsUnavailable(t *testing.T) {
	l, err := limiter.New(limiter.Config{Limit: 5, Window: time.Minute, Sync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(t, l, httpmw.Options{})(ok)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), "closed") {
		t.Fatalf("after Close: %d %v %q, want 503 with Retry-After: 1", w.Code, w.Header(), w.Body.String())
	}
}
