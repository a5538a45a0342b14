package rls

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// severalConfig is envoyproxy/ratelimit issue #262's policy, scaled down:
// a burst limit and a sustained one on each account.
const severalConfig = `
domain: d
descriptors:
  - key: account_id
    rate_limits:
      - unit: second
        requests_per_unit: 2
        name: burst
      - unit: minute
        requests_per_unit: 3
        name: sustained
`

// Over gRPC, a request is admitted only if both limits admit it, a request
// the burst limit refuses spends none of the minute's, and the status
// names the limit that binds, with its window's reset; over every design.
func TestSeveralLimitsGRPC(t *testing.T) {
	for _, d := range []string{"shared-counter", "central-log", "central-counter", "headroom"} {
		t.Run(d, func(t *testing.T) {
			clk := newClock()
			src := severalConfig + "fleetlimit:\n  design: " + d + "\n"
			c, svc := serveWith(t, src, servedLimiter(t, src, clk))
			ask := func() *pb.RateLimitResponse {
				return call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("account_id", "a1")}})
			}
			type want struct {
				code  pb.RateLimitResponse_Code
				name  string
				reset time.Duration
			}
			for i, w := range []want{
				{pb.RateLimitResponse_OK, "burst", time.Second},         // 1 of 2 left of the burst, 2 of 3 of the minute
				{pb.RateLimitResponse_OK, "burst", time.Second},         // 0 and 1 left
				{pb.RateLimitResponse_OVER_LIMIT, "burst", time.Second}, // refused by the burst: the minute keeps 1
				{pb.RateLimitResponse_OK, "sustained", time.Minute - 2*time.Second},
				{pb.RateLimitResponse_OVER_LIMIT, "sustained", time.Minute - 2*time.Second},
			} {
				if i == 3 {
					clk.add(2 * time.Second)
					svc.lim.SyncNow(t.Context()) // as the sync loop does every second of real time
				}
				r := ask()
				st := r.Statuses[0]
				if r.OverallCode != w.code || st.Code != w.code || st.CurrentLimit.GetName() != w.name || st.DurationUntilReset.AsDuration() != w.reset {
					t.Fatalf("request %d: %v %v %q %v, want %v %q %v", i+1, r.OverallCode, st.Code, st.CurrentLimit.GetName(),
						st.DurationUntilReset.AsDuration(), w.code, w.name, w.reset)
				}
			}
		})
	}
}

// Over /json too, and validate's line says both.
func TestSeveralLimitsJSON(t *testing.T) {
	clk := newClock()
	_, svc := serveWith(t, severalConfig, servedLimiter(t, severalConfig, clk))
	h := svc.Handler()
	body := `{"domain":"d","descriptors":[{"entries":[{"key":"account_id","value":"a2"}]}]}`
	var codes []int
	var last map[string]any
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/json", strings.NewReader(body)))
		codes = append(codes, rec.Code)
		json.Unmarshal(rec.Body.Bytes(), &last)
	}
	st := last["statuses"].([]any)[0].(map[string]any)
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || st["currentLimit"].(map[string]any)["name"] != "burst" {
		t.Fatalf("codes %v, last %v", codes, last)
	}
	if got := svc.cfg.Load().Limits()[0].String(); got != `2 per SECOND, name "burst" and 3 per MINUTE, name "sustained"` {
		t.Fatalf("validate's line: %q", got)
	}
}

func TestSeveralLimitsRefusedInYAML(t *testing.T) {
	one := "\n      - unit: minute\n        requests_per_unit: 3\n"
	for _, c := range []struct{ src, want string }{
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n    rate_limits:" + one, "both rate_limit and rate_limits"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits: []\n", "one or more limits"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:" + one + "      - unit: minute\n        requests_per_unit: 9\n", "two limits of one window"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:" + one + "      - unlimited: true\n", "unlimited"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:" + one + "      - unit: hour\n        requests_per_unit: 9\n        replaces: [{name: x}]\n", "replaces belongs"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n      - {unit: hour, requests_per_unit: 9, name: a}\n      - {unit: day, requests_per_unit: 9, name: a}\n", "taken"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n      - {unit: fortnight, requests_per_unit: 9}\n", "invalid rate limit unit"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limits:" + one + "      - unit: hour\n        requests_per_unit: 9\nfleetlimit:\n  window_kind: sliding\n  window_buckets: 10\n", "exact logs"},
	} {
		if _, err := Parse("t.yaml", strings.NewReader(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.src, err, c.want)
		}
	}
	many := "domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n"
	for i := range MaxLimitsPerDescriptor + 1 {
		many += "      - {unit: second, requests_per_unit: 9, unit_multiplier: " + itoa(i+1) + "}\n"
	}
	if _, err := Parse("t.yaml", strings.NewReader(many)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d limits: %v", MaxLimitsPerDescriptor+1, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
