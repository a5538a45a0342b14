package fleetlimitcaddy

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// Caddy run in this process on a redis-server that speaks only TLS: with
// the CA that signed the server, each key's third request in a minute is
// a 429, and Redis counted the admits; with a client certificate too; and
// the settings a TLS connection cannot be made with are refused, naming
// why: the system's CAs (which never signed the test's server), a
// certificate without its key, a CA file that is not there.
func TestCaddyOnRedisOverTLS(t *testing.T) {
	p := redistest.NewPKI(t)
	srv := redistest.StartTLS(t, p)
	cert, key, _ := p.Issue(t, "caddy", x509.ExtKeyUsageClientAuth)
	port := freePort(t)
	handler := func(tls string) string {
		return fmt.Sprintf("\tfleetlimit {\n\t\tzone api {\n\t\t\tkey {http.request.header.X-API-Key}\n\t\t\tlimit 2\n\t\t\twindow 1m\n\t\t\tdesign central-log\n\t\t}\n"+
			"\t\tredis %s {\n\t\t\tprefix tls-test:\n\t\t\ttls {\n%s\t\t\t}\n\t\t}\n\t}", srv.Addr, tls)
	}
	for i, tls := range []string{
		fmt.Sprintf("\t\t\t\tca %s\n", p.CAFile),
		fmt.Sprintf("\t\t\t\tca %s\n\t\t\t\tcert %s\n\t\t\t\tkey %s\n", p.CAFile, cert, key),
	} {
		if err := load(t, global(t, port)+site(port, "ok", handler(tls))); err != nil {
			t.Fatalf("%q: %v", tls, err)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", port)
		user := fmt.Sprintf("user-%d", i)
		for n, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
			fetch := get
			if n == 0 {
				fetch = getAfterReload // the first after a load (i = 1 reloads)
			}
			if code, _, _ := fetch(t, url, user); code != want {
				t.Fatalf("%q: request %d: %d, want %d", tls, n+1, code, want)
			}
		}
	}
	c := srv.Client()
	defer c.Close()
	if keys, err := c.Keys(t.Context(), "tls-test:*").Result(); err != nil || len(keys) == 0 {
		t.Fatalf("Redis over TLS holds no key of the zone: %v %v", keys, err)
	}
	for _, c := range []struct{ tls, want string }{
		{"", "certificate"}, // the system's CAs
		{fmt.Sprintf("\t\t\t\tca %s\n\t\t\t\tcert %s\n", p.CAFile, cert), "cert and key go together"},
		{"\t\t\t\tca /nonexistent/ca.pem\n", "/nonexistent/ca.pem"},
		{"\t\t\t\tcolour blue\n", `unknown setting "colour"`},
	} {
		err := load(t, global(t, port)+site(port, "ok", handler(c.tls)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tls block %q: error %v, want one naming %q", c.tls, err, c.want)
		}
	}
	caddy.Stop()
}
