package fleetlimitcaddy

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// caddyfileBlocks returns the fenced caddyfile blocks of a Markdown page.
func caddyfileBlocks(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```caddyfile\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no caddyfile block", page)
	}
	return blocks
}

// The README's Caddyfile runs as it is (on a free loopback port in place
// of :8080): a request with an API key is admitted with the zone's
// headers, and the page's configuration reference adapts, every
// subdirective of it understood.
func TestDocsCaddyfiles(t *testing.T) {
	readme := caddyfileBlocks(t, "../../README.md")[0]
	if !strings.HasPrefix(readme, ":8080 {") {
		t.Fatalf("the README's Caddyfile no longer starts with its site :8080: %q", readme)
	}
	port := freePort(t)
	cf := global(t, port) + strings.Replace(readme, ":8080", fmt.Sprintf("http://127.0.0.1:%d", port), 1)
	if err := load(t, cf); err != nil {
		t.Fatalf("the README's Caddyfile: %v", err)
	}
	t.Cleanup(func() { caddy.Stop() })
	code, h, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", port), "alice")
	if code != 200 || body != "ok" || h.Get("RateLimit-Policy") != `"per-key";q=100;w=60` {
		t.Fatalf("the README's Caddyfile answers %d %q, RateLimit-Policy %q", code, body, h.Get("RateLimit-Policy"))
	}
	for _, block := range caddyfileBlocks(t, "../../docs/caddy.md") {
		if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(block), nil); err != nil {
			t.Errorf("docs/caddy.md's Caddyfile does not adapt: %v\n%s", err, block)
		}
	}
}
