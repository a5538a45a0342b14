package httpmw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
)

// Limit each API key to 2 requests a minute; the third gets a 429 with the
// headers a client needs to back off.
func Example() {
	l, _ := limiter.New(limiter.Config{Limit: 2, Window: time.Minute})
	defer l.Close()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	limit, err := httpmw.New(l, httpmw.Options{Key: httpmw.Header("X-API-Key")})
	if err != nil {
		panic(err) // a bad option is refused here, never at a request
	}
	h := limit(api)

	for i := 0; i < 3; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		hd := w.Header()
		fmt.Printf("%d RateLimit-Policy: %s RateLimit: %s Retry-After: %q\n", w.Code,
			hd.Get("RateLimit-Policy"), hd.Get("RateLimit"), hd.Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit-Policy: "default";q=2;w=60 RateLimit: "default";r=1;t=60 Retry-After: ""
	// 200 RateLimit-Policy: "default";q=2;w=60 RateLimit: "default";r=0;t=60 Retry-After: ""
	// 429 RateLimit-Policy: "default";q=2;w=60 RateLimit: "default";r=0;t=60 Retry-After: "60"
}

// The legacy headers of draft -06 and envoyproxy/ratelimit, under names of
// one's choosing.
func ExampleOptions_legacy() {
	l, _ := limiter.New(limiter.Config{Limit: 2, Window: time.Minute})
	defer l.Close()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	limit, err := httpmw.New(l, httpmw.Options{Headers: httpmw.LegacyHeaders, Legacy: httpmw.LegacyNames{Remaining: "X-RateLimit-Remaining"}})
	if err != nil {
		panic(err)
	}
	h := limit(api)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	hd := w.Header()
	fmt.Println(hd.Get("RateLimit-Limit"), hd.Get("X-RateLimit-Remaining"), hd.Get("RateLimit-Reset"))
	// Output: 2 1 60
}

// A burst limit beside a sustained one: RateLimit-Policy lists both, and
// RateLimit describes the one that binds.
func ExampleOptions_limits() {
	l, _ := limiter.New(limiter.Config{})
	defer l.Close()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	limit, err := httpmw.New(l, httpmw.Options{Key: httpmw.Header("X-API-Key"), Limits: []policy.Policy{
		{Name: "burst", Limit: limiter.Limit{Requests: 2, Window: time.Second}},
		{Name: "daily", Limit: limiter.Limit{Requests: 250, Window: 24 * time.Hour}},
	}})
	if err != nil {
		panic(err)
	}
	h := limit(api)

	for i := 0; i < 3; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s | %s\n", w.Code, w.Header().Get("RateLimit-Policy"), w.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "burst";q=2;w=1, "daily";q=250;w=86400 | "burst";r=1;t=1
	// 200 "burst";q=2;w=1, "daily";q=250;w=86400 | "burst";r=0;t=1
	// 429 "burst";q=2;w=1, "daily";q=250;w=86400 | "burst";r=0;t=1
}
