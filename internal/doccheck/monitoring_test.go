package doccheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/rls"
)

const (
	alertRules = "../../examples/monitoring/alerts.yaml"
	dashboard  = "../../examples/monitoring/grafana-dashboard.json"
)

// TestAlertRulesPassPromtool runs promtool (Debian's prometheus package)
// on the shipped alert rules. Without promtool it skips, saying so, unless
// FLEETLIMIT_REQUIRE_PROMTOOL is set, as the test script sets it.
func TestAlertRulesPassPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FLEETLIMIT_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is not installed (Debian: apt-get install prometheus)")
		}
		t.Skip("promtool is not installed (Debian: apt-get install prometheus); the alert rules are not checked")
	}
	out, err := exec.Command(path, "check", "rules", alertRules).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// metricName is a fleetlimit metric's name in a query.
var metricName = regexp.MustCompile(`\bfleetlimit_[a-z_]+`)

// unknownMetrics is the fleetlimit_ names query text uses that known
// (metric names; a histogram's series end in _bucket, _sum or _count)
// lacks.
func unknownMetrics(text string, known map[string]bool) []string {
	var out []string
	for _, n := range metricName.FindAllString(text, -1) {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func registered(t *testing.T) map[string]bool {
	t.Helper()
	lim, err := limiter.New(limiter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	cfg, err := rls.Parse("m.yaml", strings.NewReader("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := rls.NewService(cfg, lim).Metrics()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range ms {
		known[m.Name] = true
	}
	return known
}

// TestMonitoringQueriesRegisteredMetrics holds every metric the alert
// rules and the dashboard query to one serve registers, and plants an
// unknown name to show the check sees it.
func TestMonitoringQueriesRegisteredMetrics(t *testing.T) {
	known := registered(t)
	if bad := unknownMetrics("rate(fleetlimit_requests_total[1m]) / fleetlimit_no_such_metric", known); len(bad) != 1 || bad[0] != "fleetlimit_no_such_metric" {
		t.Fatalf("planted an unknown metric, the check found %v", bad)
	}
	rules, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	if bad := unknownMetrics(string(rules), known); len(bad) > 0 {
		t.Errorf("the alert rules query metrics serve does not register: %v", bad)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, q := range p.Targets {
			if bad := unknownMetrics(q.Expr, known); len(bad) > 0 || !metricName.MatchString(q.Expr) {
				t.Errorf("panel %q: %q queries %v, not metrics serve registers", p.Title, q.Expr, bad)
			}
		}
	}
}
