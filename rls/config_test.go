package rls

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

func parse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse("test.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The matching rules of envoyproxy/ratelimit's README, case by case.
func TestLookup(t *testing.T) {
	c := parse(t, `
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
---
domain: rl
descriptors:
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: bar
        rate_limit:
          unit: minute
          requests_per_unit: 10
      - key: destination_cluster
        rate_limit:
          unit: minute
          requests_per_unit: 20
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: foo
    value: bar*
    rate_limit:
      unit: hour
      requests_per_unit: 7
  - key: client_id
    value: healthcheck
    rate_limit:
      unlimited: true
`)
	for _, tc := range []struct {
		domain  string
		entries []Entry
		want    uint32 // requests_per_unit; 0: no limit
		unit    Unit
	}{
		{"mongo_cps", []Entry{{"database", "users"}}, 500, Second},
		{"mongo_cps", []Entry{{"database", "other"}}, 0, 0},                                      // no default for database
		{"rl", []Entry{{"source_cluster", "proxy"}, {"destination_cluster", "bar"}}, 10, Minute}, // exact
		{"rl", []Entry{{"source_cluster", "proxy"}, {"destination_cluster", "baz"}}, 20, Minute}, // blank value: any value
		{"rl", []Entry{{"source_cluster", "proxy"}}, 0, 0},                                       // no limit at that depth
		{"rl", []Entry{{"source_cluster", "other"}, {"destination_cluster", "bar"}}, 0, 0},       // first level does not match
		{"rl", []Entry{{"remote_address", "10.0.0.1"}}, 10, Second},                              // key only
		{"rl", []Entry{{"remote_address", "10.0.0.1"}, {"path", "/x"}}, 0, 0},                    // deeper than the config
		{"rl", []Entry{{"foo", "barbaz"}}, 7, Hour},                                              // wildcard prefix
		{"rl", []Entry{{"foo", "ba"}}, 0, 0},                                                     // not the prefix
		{"nope", []Entry{{"remote_address", "x"}}, 0, 0},                                         // unknown domain
	} {
		lim := c.Lookup(tc.domain, tc.entries)
		got, unit := uint32(0), Unit(0)
		if lim != nil {
			got, unit = lim.RequestsPerUnit, lim.Unit
		}
		if got != tc.want || unit != tc.unit {
			t.Errorf("%s %v: %d per %v, want %d per %v", tc.domain, tc.entries, got, unit, tc.want, tc.unit)
		}
	}
	if lim := c.Lookup("rl", []Entry{{"client_id", "healthcheck"}}); lim == nil || !lim.Unlimited {
		t.Errorf("unlimited: %+v", lim)
	}
}

func TestReplacesShadowAndSettings(t *testing.T) {
	c := parse(t, `
domain: d
descriptors:
  - key: user
    shadow_mode: true
    detailed_metric: true
    rate_limit:
      name: per-user
      unit: MINUTE
      requests_per_unit: 5
  - key: vip
    rate_limit:
      unit: minute
      requests_per_unit: 50
      replaces:
        - name: per-user
fleetlimit:
  design: lease
  window_kind: sliding
  sync: 250ms
  gateways: 3
  gateway: 2
`)
	u := c.Lookup("d", []Entry{{"user", "a"}})
	if u == nil || !u.ShadowMode || !u.DetailedMetric || u.Name != "per-user" || u.FullKey != "d.user" {
		t.Fatalf("user limit %+v", u)
	}
	v := c.Lookup("d", []Entry{{"vip", "a"}})
	if v == nil || len(v.Replaces) != 1 || v.Replaces[0] != "per-user" {
		t.Fatalf("vip limit %+v", v)
	}
	s := c.Settings
	if s.Design != "lease" || s.WindowKind.String() != "sliding" || s.Sync.Milliseconds() != 250 || s.Gateways != 3 || s.Gateway != 2 {
		t.Fatalf("settings %+v", s)
	}
	d := parse(t, "domain: x\n")
	if d.Settings.Design != design.Default || d.Settings.WindowKind.String() != "fixed" || d.Settings.Timeout.Milliseconds() != 50 {
		t.Fatalf("defaults %+v", d.Settings)
	}
}

// Malformed files are rejected with the file, the line and the problem.
func TestMalformed(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"descriptors: []\n", "test.yaml:1: config file cannot have empty domain"},
		{"domain: d\ndescriptors:\n  - value: x\n", "test.yaml:3: descriptor has empty key"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", "test.yaml:5: invalid rate limit unit 'fortnight'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      requests_per_unit: 1\n", "test.yaml:5: invalid rate limit unit ''"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", "test.yaml:6: should not specify rate limit unit when unlimited"},
		{"domain: d\ndescriptors:\n  - key: a\n    ratelimit:\n      unit: second\n", `test.yaml:4: config error, unknown key 'ratelimit'`},
		{"domain: d\ndescriptors:\n  - key: a\n  - key: a\n", "test.yaml:4: duplicate descriptor composite key 'd.a'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: -3\n", `test.yaml:6: requests_per_unit "-3"`},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: n\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: n\n", "test.yaml:5: replaces should not contain name of same descriptor"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - {}\n", "test.yaml:8: should not have an empty replaces entry"},
		{"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", `test.yaml:4: want true or false, not "maybe"`},
		{"domain: d\ndescriptors:\n\t- key: a\n", "test.yaml:3: invalid YAML"},
		{"domain: d\nfleetlimit:\n  design: magic\n", `test.yaml: fleetlimit settings: unknown design "magic"`},
		{"domain: d\nfleetlimit:\n  colour: red\n", `test.yaml:3: unknown fleetlimit setting "colour"`},
		{"domain: d\n---\ndomain: d\n", `test.yaml:3: duplicate domain 'd' in config file`},
		{"", "test.yaml: no domain configured"},
	} {
		_, err := Parse("test.yaml", strings.NewReader(tc.src))
		var ce *ConfigError
		if err == nil || !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got  %v\n want %s...", tc.src, err, tc.want)
		}
	}
}

func TestExampleConfigLoads(t *testing.T) {
	c, err := Load("../examples/ratelimit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if lim := c.Lookup("edge", []Entry{{"remote_address", "1.2.3.4"}, {"path", "/login"}}); lim == nil || lim.RequestsPerUnit != 10 {
		t.Fatalf("login limit %+v", lim)
	}
}

func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile("../examples/ratelimit.yaml"); err == nil {
		f.Add(string(src))
	}
	f.Add("domain: d\ndescriptors:\n  - key: a\n    value: b*\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	f.Add("domain: [x]\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := Parse("fuzz.yaml", strings.NewReader(src))
		if err == nil {
			for _, d := range c.Domains() {
				c.Lookup(d, []Entry{{"a", "b"}, {"c", ""}})
			}
		}
	})
}

func TestSettingsAndKeysOutOfBounds(t *testing.T) {
	for _, c := range []struct{ src, say string }{
		{"domain: d\ndescriptors:\n  - key: b\n    key: c\n", `:4: key "key" given twice in one mapping (first on line 3)`},
		{"domain: d\ndomain: e\n", `:2: key "domain" given twice`},
		{"domain: d\nfleetlimit:\n  sync: 1ns\n", "sync 1ns: want from 10ms to 1h0m0s"},
		{"domain: d\nfleetlimit:\n  gateways: 1000000\n", "gateways 1000000: want 1 to 4096"},
		{"domain: d\nfleetlimit:\n  timeout: 1h\n", "timeout 1h0m0s: want a positive duration of at most 10s"},
		{"domain: d\nfleetlimit:\n  max_key_bytes: 1000\n", "max_key_bytes 1000: want 1 MiB"},
		{"domain: d\nfleetlimit:\n  fail_after: -1\n", "fail_after -1: want 1 to 1000"},
	} {
		_, err := Parse("f.yaml", strings.NewReader(c.src))
		if err == nil || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%q: error %v, want one saying %q", c.src, err, c.say)
		}
	}
}

// '*' matches any run of characters anywhere in a value, several times,
// as upstream's #1085 does; the first matching pattern in file order wins.
func TestWildcardsAnywhere(t *testing.T) {
	c, err := Parse("f.yaml", strings.NewReader(`domain: d
descriptors:
  - key: path
    value: /v1/*/items
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /v2/*/x/*
    rate_limit: {unit: minute, requests_per_unit: 6}
  - key: path
    value: "*.pdf"
    rate_limit: {unit: minute, requests_per_unit: 7}
  - key: path
    value: /v2/*
    rate_limit: {unit: minute, requests_per_unit: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want uint32 // 0: no limit
	}{
		{"/v1/a/items", 5}, {"/v1//items", 5}, {"/v1/a/b/items", 5}, {"/v1/a/items/", 0}, {"/v1/items", 0},
		{"/v2/a/x/b", 6}, {"/v2/a/x/", 6}, {"/v2/a/y", 8}, {"/docs/a.pdf", 7}, {".pdf", 7}, {"/v2/a.pdf", 7},
	} {
		lim := c.Lookup("d", []Entry{{"path", tc.path}})
		got := uint32(0)
		if lim != nil {
			got = lim.RequestsPerUnit
		}
		if got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.path, got, tc.want)
		}
	}
}
