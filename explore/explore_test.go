package explore_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetlimit/fleetlimit/explore"
	"github.com/fleetlimit/fleetlimit/sim"
)

// chromium finds Debian's Chromium, or skips (fails, when the test command
// asks for a browser with FLEETLIMIT_REQUIRE_BROWSER=1).
func chromium(t *testing.T) string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("FLEETLIMIT_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium: install Debian's chromium package (./scripts/test does)")
	}
	t.Skip("no chromium; ./scripts/test installs it")
	return ""
}

// simAdmitted is admitted_x of one run of sim, as sim --json prints it, for
// the explorer's default scenario at K = k.
func simAdmitted(t *testing.T, design string, k int) string {
	p := sim.Defaults()
	p.Design, p.Gateways, p.Duration, p.Traffic = design, k, 10*time.Minute, sim.Traffic{Kind: sim.Flood, Factor: 100}
	r, err := sim.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%.3f", r.AdmittedX)
}

// The explorer in a real browser: the page loads and shows each design's
// figures, the same as the simulator's for the same flags; changing K runs
// it again; a bad value shows its message, and the last run greyed.
func TestExplorerInABrowser(t *testing.T) {
	bin := chromium(t)
	srv := httptest.NewServer(explore.Handler())
	defer srv.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	cell := func(design, fig string) chromedp.CSS {
		return chromedp.CSS(fmt.Sprintf(`#summary tbody tr[data-design="%s"] td.%s`, design, fig))
	}
	text := func(sel chromedp.CSS) string {
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	set := func(id, v string) {
		js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q;
			e.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, id, v)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(cell("headroom", "admitted_x"))); err != nil {
		t.Fatal(err)
	}
	if got, want := text(cell("shared-counter", "admitted_x")), simAdmitted(t, "shared-counter", 8); got != want {
		t.Errorf("shared-counter at K = 8: the page shows %s, sim %s", got, want)
	}
	if got, want := text(cell("headroom", "admitted_x")), simAdmitted(t, "headroom", 8); got != want {
		t.Errorf("headroom at K = 8: the page shows %s, sim %s", got, want)
	}
	params, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("body"), "data-params"))
	if err != nil || !strings.Contains(params.Value, "--gateways 8 ") {
		t.Errorf("the page ran %q (%v)", params.Value, err)
	}

	set("gateways", "4")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-params*="--gateways 4 "]`))); err != nil {
		t.Fatal(err)
	}
	if got, want := text(cell("shared-counter", "admitted_x")), simAdmitted(t, "shared-counter", 4); got != want {
		t.Errorf("shared-counter at K = 4: the page shows %s, sim %s", got, want)
	}

	// each design's row links to its run drawn, which the browser opens
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#summary tbody tr[data-design="headroom"] a.picture`), "href"))
	if err != nil || !strings.Contains(href.Value, "designs=headroom") || !strings.Contains(href.Value, "gateways=4") {
		t.Fatalf("headroom's picture link %q (%v)", href.Value, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"+href.Value)); err != nil {
		t.Fatal(err)
	}
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.localName + "|" + document.documentElement.textContent`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"svg|", "headroom: K = 4 gateways", "each gateway's view", "gateway 3", "flood ×100 starts", "syncs"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the picture the browser opened lacks %q: %.300s", want, drawn)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(cell("headroom", "admitted_x"))); err != nil {
		t.Fatal(err)
	}

	set("gateways", "0")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#error`))); err != nil {
		t.Fatal(err)
	}
	if msg := text(chromedp.CSS(`#error`)); !strings.Contains(msg, "gateways 0") {
		t.Errorf("K = 0: the page says %q, want the simulator's message about gateways", msg)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#summary.stale`))); err != nil {
		t.Errorf("K = 0: the last run's figures are not marked stale: %v", err)
	}
}

// The API refuses what it cannot run, saying why, and runs what it can.
func TestRunBounds(t *testing.T) {
	for _, c := range []struct {
		q    map[string][]string
		want string
	}{
		{map[string][]string{"gateways": {"0"}}, "gateways 0"},
		{map[string][]string{"gateways": {"many"}}, `gateways "many": want a whole number`},
		{map[string][]string{"designs": {"fastest"}}, `design "fastest": want one of`},
		{map[string][]string{"designs": {"split"}, "duration": {"3h"}}, "at most 2h0m0s"},
		{map[string][]string{"traffic": {"flood:100000"}, "duration": {"1h"}}, "the explorer runs at most"},
		{map[string][]string{"sync": {"soon"}}, `sync "soon": want a duration`},
		{map[string][]string{"loss": {"2"}}, "loss"},
	} {
		if _, err := explore.Run(c.q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.q, err, c.want)
		}
	}
	r, err := explore.Run(map[string][]string{"designs": {"central-log"}, "traffic": {"steady:0.8"}})
	if err != nil || len(r.Runs) != 1 || len(r.Runs[0].InWindowX) != explore.Buckets {
		t.Fatalf("%v, %+v", err, r)
	}
}
