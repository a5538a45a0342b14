package rls

import (
	"strings"
	"testing"
)

// The configuration cases of envoyproxy/ratelimit's test/config suite (as
// of its commit f2fb15770f7fd1c88ca6c3a1b58ee513917ace96), each written
// here as a config of the same shape: a file upstream refuses is refused
// with upstream's message (and fleetlimit's line), one it loads loads.
func TestUpstreamConfigCases(t *testing.T) {
	for _, c := range []struct {
		name, src, say string // say "": loads
	}{
		{"TestEmptyDomain", "descriptors:\n  - key: k\n", "config file cannot have empty domain"},
		{"TestEmptyKey", "domain: d\ndescriptors:\n  - value: v\n    rate_limit: {unit: second, requests_per_unit: 1}\n", "descriptor has empty key"},
		{"TestDuplicateKey", "domain: d\ndescriptors:\n  - {key: k, value: v}\n  - {key: k, value: v}\n", "duplicate descriptor composite key 'd.k_v'"},
		{"TestBadLimitUnit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: foo, requests_per_unit: 1}\n", "invalid rate limit unit 'foo'"},
		{"TestReplacesSelf", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: me, unit: second, requests_per_unit: 1, replaces: [{name: me}]}\n", "replaces should not contain name of same descriptor"},
		{"TestReplacesEmpty", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: me, unit: second, requests_per_unit: 1, replaces: [{name: \"\"}]}\n", "should not have an empty replaces entry"},
		{"TestBadYaml", "domain: d\ndescriptors: [\n", "invalid YAML"},
		{"TestMisspelledKey", "domain: d\ndescriptors:\n  - key: k\n    ratelimit: {unit: second}\n", "config error, unknown key 'ratelimit'"},
		{"TestMisspelledKey (2)", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requestsperunit: 1}\n", "config error, unknown key 'requestsperunit'"},
		{"TestNonStringKey", "0.25: d\n", "config error, key is not of type string: 0.25"},
		{"TestNonMapList", "domain: d\ndescriptors:\n  - a\n", "config error, yaml file contains list of type other than map: a"},
		{"TestUnlimitedWithRateLimitUnit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n", "should not specify rate limit unit when unlimited"},
		{"TestDuplicateDomain (its file's descriptors are empty)", "domain: d\ndescriptors:\n", ""},
		{"TestShareThreshold (without a wildcard)", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", "share_threshold can only be used with wildcard values"},
		{"TestMetadata", "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: {b: [1, two]}}\n    rate_limit: {unit: second, requests_per_unit: 1}\n", ""},
	} {
		_, err := Parse("f.yaml", strings.NewReader(c.src))
		switch {
		case c.say == "" && err != nil:
			t.Errorf("%s: %v, want it to load", c.name, err)
		case c.say != "" && (err == nil || !strings.Contains(err.Error(), c.say) || !strings.HasPrefix(err.Error(), "f.yaml:")):
			t.Errorf("%s: error %v, want f.yaml:LINE: ... %q", c.name, err, c.say)
		}
	}
}

// TestDomainMerge, TestDuplicateDomain and TestDuplicateKeyDomainMerge: a
// domain given by two files is refused, unless merging, when the second's
// descriptors join the first's; a descriptor given twice is still refused.
func TestUpstreamDomainMerge(t *testing.T) {
	one := File{Name: "one.yaml", Src: []byte("domain: d\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit: {unit: minute, requests_per_unit: 10}\n")}
	two := File{Name: "two.yaml", Src: []byte("domain: d\ndescriptors:\n  - key: key1\n    value: value2\n    rate_limit: {unit: minute, requests_per_unit: 20}\n")}
	if _, err := ParseFiles([]File{one, two}, false); err == nil || !strings.Contains(err.Error(), "two.yaml:1: duplicate domain 'd' in config file") {
		t.Fatalf("without merging: %v", err)
	}
	c, err := ParseFiles([]File{one, two}, true)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]uint32{"value1": 10, "value2": 20} {
		if l := c.Lookup("d", []Entry{{"key1", v}}); l == nil || l.RequestsPerUnit != want {
			t.Errorf("merged %s: %v, want %d a minute", v, l, want)
		}
	}
	if _, err := ParseFiles([]File{one, one}, true); err == nil || !strings.Contains(err.Error(), "duplicate descriptor composite key 'd.key1_value1'") {
		t.Fatalf("the same descriptor twice while merging: %v", err)
	}
}
