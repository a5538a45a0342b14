package fleetlimitcaddy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// global is the Caddyfile's global block for a test: no admin endpoint,
// plain HTTP on port, bound to loopback, storage in a temporary folder.
func global(t testing.TB, port int) string {
	return fmt.Sprintf("{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n\thttp_port %d\n\tdefault_bind 127.0.0.1\n\tstorage file_system %s\n}\n",
		port, t.TempDir())
}

// load adapts a Caddyfile and runs it in this process, replacing the
// configuration running before.
func load(t testing.TB, caddyfile string) error {
	t.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		return err
	}
	return caddy.Load(cfg, true)
}

// get asks url with an API key and returns the status, headers and body,
// on a connection of its own: a kept-alive one may belong to a server a
// reload is shutting down, which closes it under the next request (EOF,
// seen beside two CPU hogs).
func get(t testing.TB, url, key string) (int, http.Header, string) {
	t.Helper()
	code, h, body, err := tryGet(url, key)
	if err != nil {
		t.Fatal(err)
	}
	return code, h, body
}

// tryGet is get, returning the error.
func tryGet(url, key string) (int, http.Header, string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, r.Header, string(b), nil
}

// getAfterReload is get for the first request after an in-process reload:
// while Caddy hands the port from the old servers to the new, a connection
// may be reset or closed before any handler reads it (seen once in 30
// runs), and is tried again, at most 50 times.
func getAfterReload(t testing.TB, url, key string) (int, http.Header, string) {
	t.Helper()
	for i := 0; ; i++ {
		code, h, body, err := tryGet(url, key)
		if err == nil {
			return code, h, body
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func site(port int, body string, handler string) string {
	return fmt.Sprintf("http://127.0.0.1:%d {\n%s\n\trespond %q\n}\n", port, handler, body)
}

const apiZone = `	fleetlimit {
		zone api {
			key {http.request.header.X-API-Key}
			limit 2
			window 1m
		}
	}`

// Caddy run in this process from a Caddyfile: each key's third request in
// a minute is a 429 with Retry-After and the draft's headers; another key
// is untouched; a reload that keeps the zone keeps its counts, and one
// that changes the zone starts them anew.
func TestCaddyfileInProcess(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if err := load(t, global(t, port)+site(port, "hello", apiZone)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caddy.Stop() })
	for i, want := range []int{200, 200, 429} {
		code, h, body := get(t, url, "alice")
		if code != want {
			t.Fatalf("request %d: %d %q, want %d", i+1, code, body, want)
		}
		if got := h.Get("RateLimit-Policy"); got != `"api";q=2;w=60` {
			t.Errorf("request %d: RateLimit-Policy %q", i+1, got)
		}
		if got, wantR := h.Get("RateLimit"), fmt.Sprintf(`"api";r=%d;t=60`, max(1-i, 0)); got != wantR {
			t.Errorf("request %d: RateLimit %q, want %q", i+1, got, wantR)
		}
		if ra := h.Get("Retry-After"); (want == 429) != (ra != "") {
			t.Errorf("request %d: Retry-After %q", i+1, ra)
		}
	}
	if code, _, _ := get(t, url, "bob"); code != 200 {
		t.Fatalf("another key: %d", code)
	}

	// the same zone in a new configuration: alice is still spent
	if err := load(t, global(t, port)+site(port, "hello again", apiZone)); err != nil {
		t.Fatal(err)
	}
	if code, _, body := getAfterReload(t, url, "bob"); code != 200 || body != "hello again" {
		t.Fatalf("after the reload: %d %q, want 200 from the new configuration", code, body)
	}
	if code, _, _ := get(t, url, "alice"); code != 429 {
		t.Fatalf("after a reload that kept the zone, alice got %d: her count was lost", code)
	}
	// a changed zone is a new limit, counted anew
	if err := load(t, global(t, port)+site(port, "hello", strings.Replace(apiZone, "limit 2", "limit 3", 1))); err != nil {
		t.Fatal(err)
	}
	if code, h, _ := getAfterReload(t, url, "alice"); code != 200 || h.Get("RateLimit-Policy") != `"api";q=3;w=60` {
		t.Fatalf("after a reload that changed the zone: %d %q", code, h.Get("RateLimit-Policy"))
	}
}

// Several zones, each with its own key and matchers; legacy headers are
// the tightest zone's.
func TestZonesAndMatchers(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	h := `	fleetlimit {
		zone per-key {
			key {http.request.header.X-API-Key}
			limit 5
			window 1m
		}
		zone writes {
			key {remote_host}
			limit 1
			window 1m
			match {
				method POST
			}
		}
		headers legacy
	}`
	if err := load(t, global(t, port)+site(port, "ok", h)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caddy.Stop() })
	post := func() (int, http.Header) {
		req, _ := http.NewRequest("POST", url+"/", nil)
		req.Header.Set("X-API-Key", "carol")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode, r.Header
	}
	if code, hd := post(); code != 200 || hd.Get("RateLimit-Limit") != "1" || hd.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("first POST: %d, limit %q remaining %q; want 200 under the writes zone's 1", code, hd.Get("RateLimit-Limit"), hd.Get("RateLimit-Remaining"))
	}
	if code, _ := post(); code != 429 {
		t.Fatalf("second POST: %d, want 429 from the writes zone", code)
	}
	// GETs are not writes: only the per-key zone, with 3 left of 5
	if code, hd, _ := get(t, url+"/", "carol"); code != 200 || hd.Get("RateLimit-Limit") != "5" || hd.Get("RateLimit-Remaining") != "2" {
		t.Fatalf("GET: %d, limit %q remaining %q; want 200, 5, 2", code, hd.Get("RateLimit-Limit"), hd.Get("RateLimit-Remaining"))
	}
}

// A bad setting is refused, and the error names it; nothing is served.
func TestBadSettingsAreNamed(t *testing.T) {
	port := freePort(t)
	for _, c := range []struct{ zone, want string }{
		{"key {remote_host}\nlimit 0\nwindow 1m", "limit 0"},
		{"key {remote_host}\nlimit ten\nwindow 1m", `limit "ten"`},
		{"key {remote_host}\nlimit 10\nwindow soon", `window "soon"`},
		{"key {remote_host}\nlimit 10", "window 0s"},
		{"limit 10\nwindow 1m", "key is empty"},
		{"key {remote_host}\nlimit 10\nwindow 1m\ndesign fastest", `design: unknown design "fastest"`},
		{"key {remote_host}\nlimit 10\nwindow 1m\nburst 5", `unknown setting "burst"`},
	} {
		h := "\tfleetlimit {\n\t\tzone api {\n" + c.zone + "\n\t\t}\n\t}"
		err := load(t, global(t, port)+site(port, "ok", h))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("zone %q: error %v, want one naming %q", c.zone, err, c.want)
		}
	}
	for _, c := range []struct{ h, want string }{
		{"\tfleetlimit {\n\t}", "no zone"},
		{"\tfleetlimit {\n\t\tzone a {\n\t\t\tkey k\n\t\t\tlimit 1\n\t\t\twindow 1m\n\t\t}\n\t\tmembership\n\t}", "membership needs redis"},
		{"\tfleetlimit {\n\t\tzone a {\n\t\t\tkey k\n\t\t\tlimit 1\n\t\t\twindow 1m\n\t\t}\n\t\tgateways 3\n\t\tgateway 3\n\t}", "gateway 3 of gateways 3"},
		{"\tfleetlimit {\n\t\tzone a {\n\t\t\tkey k\n\t\t\tlimit 1\n\t\t\twindow 1m\n\t\t}\n\t\theaders fancy\n\t}", `headers "fancy"`},
		{"\tfleetlimit {\n\t\tzone a {\n\t\t\tkey k\n\t\t\tlimit 1\n\t\t\twindow 1m\n\t\t}\n\t\tredis {\n\t\t\tmode star\n\t\t}\n\t}", "redis: no address"},
	} {
		err := load(t, global(t, port)+site(port, "ok", c.h))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.h, err, c.want)
		}
	}
	caddy.Stop()
}

// The same handler from Caddy's JSON, as an operator who does not use a
// Caddyfile writes it.
func TestJSONConfig(t *testing.T) {
	port := freePort(t)
	cfg := fmt.Sprintf(`{
  "admin": {"disabled": true, "config": {"persist": false}},
  "storage": {"module": "file_system", "root": %q},
  "apps": {"http": {"http_port": %d, "servers": {"s": {
    "listen": ["127.0.0.1:%d"], "automatic_https": {"disable": true},
    "routes": [{"handle": [
      {"handler": "fleetlimit", "headers": "draft",
       "zones": {"api": {"key": "{http.request.header.X-API-Key}", "limit": 1, "window": "1m", "design": "shared-counter", "sync": "500ms"}}},
      {"handler": "static_response", "body": "ok"}]}]}}}}}`, t.TempDir(), port, port)
	if err := caddy.Load([]byte(cfg), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { caddy.Stop() })
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	if code, h, body := get(t, url, "dave"); code != 200 || body != "ok" || h.Get("RateLimit-Policy") != `"api";q=1;w=60` {
		t.Fatalf("first: %d %q %q", code, body, h.Get("RateLimit-Policy"))
	}
	if code, _, _ := get(t, url, "dave"); code != 429 {
		t.Fatalf("second: %d, want 429", code)
	}
	bad := strings.Replace(cfg, `"limit": 1`, `"limit": -1`, 1)
	if err := caddy.Load([]byte(bad), true); err == nil || !strings.Contains(err.Error(), "zone api: limit -1") {
		t.Fatalf("a limit of -1: %v", err)
	}
}

// A request still on its way through a handler that a reload has cleaned
// up (Caddy cleans the old configuration up while its last requests run)
// is refused with 503 and never reaches the next handler: a cleaned-up
// handler used to have no zones, and let it through uncounted.
func TestCleanedUpHandlerLetsNothingThrough(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	h := &Handler{Zones: map[string]*Zone{"api": {Key: "k", Limit: 5, Window: caddy.Duration(time.Minute)}}}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := h.Cleanup(); err != nil { // Caddy may clean up twice after a failed Provision
		t.Fatalf("second Cleanup: %v", err)
	}
	reached := false
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { reached = true; return nil })
	w := httptest.NewRecorder()
	err := h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil), next)
	var he caddyhttp.HandlerError
	if reached || !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Cleanup: reached next %v, error %v; want 503 and not reached", reached, err)
	}
}
