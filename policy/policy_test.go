package policy_test

import (
	"math"
	"strings"
	"testing"

	"github.com/fleetlimit/fleetlimit/policy"
)

// A policy name is a structured-field string: quotes and backslashes
// escaped, other characters outside printable ASCII dropped.
func TestPolicyNameIsAStructuredFieldString(t *testing.T) {
	long := strings.Repeat("burst-", 20) // past the field's buffer on the stack
	for name, want := range map[string]string{"api": `"api"`, `a"b\c`: `"a\"b\\c"`, "é\n": `"default"`, "": `"default"`,
		"\xffx\x7f": `"x"`, "naïve": `"nave"`, long: `"` + long + `"`} {
		if got := policy.PolicyField(name, 1, 2); got != want+";q=1;w=2" {
			t.Errorf("%q: %s, want %s;q=1;w=2", name, got, want)
		}
	}
	if got, want := policy.LimitField("api", math.MaxUint64, math.MinInt64), `"api";r=18446744073709551615;t=-9223372036854775808`; got != want {
		t.Errorf("LimitField at the ends of its numbers: %s, want %s", got, want)
	}
}
