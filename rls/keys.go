package rls

// ConfigKey is one key of a limits file outside its fleetlimit section.
type ConfigKey struct {
	Key     string // the YAML key
	Where   string // the mapping it belongs in
	Meaning string // what it does, in one sentence
}

// configKeys are the keys a limits file may hold, as envoyproxy/ratelimit
// reads them, and fleetlimit's two extensions (unit_multiplier,
// rate_limits); a test holds the parser to this table.
var configKeys = []ConfigKey{
	{"domain", "the document", "the domain the descriptors belong to; a request names it"},
	{"descriptors", "the document, a descriptor", "the descriptors of the domain, or the nested ones of a descriptor"},
	{"key", "a descriptor", "the descriptor entry's key it matches"},
	{"value", "a descriptor", "the entry's value it matches: exact, with * for any run of characters, or absent for any value"},
	{"rate_limit", "a descriptor", "the limit a request whose last entry lands here counts against"},
	{"rate_limits", "a descriptor", "several limits, all of which must admit (a fleetlimit extension; counted in exact logs)"},
	{"shadow_mode", "a descriptor", "count, but never answer OVER_LIMIT"},
	{"quota_mode", "a descriptor", "a quota: over it fails the request only when every quota limit of the request is over"},
	{"detailed_metric", "a descriptor", "name the request's values in the limit's metric label"},
	{"value_to_metric", "a descriptor", "put the request's value of a wildcard or key-only entry in the metric label"},
	{"share_threshold", "a descriptor", "every value matching the wildcard shares one counter"},
	{"metadata", "a descriptor", "returned, merged, in the response's dynamic metadata when the request passed (response_dynamic_metadata)"},
	{"unit", "a rate limit", "second, minute, hour, day, week, month or year: the window"},
	{"requests_per_unit", "a rate limit", "the requests admitted per window"},
	{"unit_multiplier", "a rate limit", "the window is that many units (a fleetlimit extension)"},
	{"unlimited", "a rate limit", "admit every request, counting none"},
	{"name", "a rate limit", "the limit's name, which replaces names"},
	{"replaces", "a rate limit", "the named limits this one lifts for the request"},
}

// ConfigKeys lists every key of a limits file outside its fleetlimit
// section (Settings holds that one's keys).
func ConfigKeys() []ConfigKey { return append([]ConfigKey(nil), configKeys...) }
