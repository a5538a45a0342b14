package httpmw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
)

// Limit each API key to 2 requests a minute; the third gets a 429 with the
// headers a client needs to back off.
func Example() {
	l, _ := limiter.New(limiter.Config{Limit: 2, Window: time.Minute})
	defer l.Close()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	h := httpmw.New(l, httpmw.Options{Key: httpmw.Header("X-API-Key")})(api)

	for i := 0; i < 3; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		hd := w.Header()
		fmt.Printf("%d limit=%s remaining=%s reset=%s retry-after=%q\n", w.Code,
			hd.Get("RateLimit-Limit"), hd.Get("RateLimit-Remaining"), hd.Get("RateLimit-Reset"), hd.Get("Retry-After"))
	}
	// Output:
	// 200 limit=2 remaining=1 reset=60 retry-after=""
	// 200 limit=2 remaining=0 reset=60 retry-after=""
	// 429 limit=2 remaining=0 reset=60 retry-after="60"
}
