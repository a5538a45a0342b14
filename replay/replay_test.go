package replay

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// request is one request of a generated log.
type request struct {
	t   int64
	key string
	gw  int
}

// traffic is three clients over 20 minutes: a quiet one, one near the limit
// and one well over it, in Poisson arrivals, by time.
func traffic(seed uint64) []request {
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).UnixNano()
	var out []request
	for i, rate := range []float64{0.05, 0.3, 2} { // per second, against 10 a minute
		key := fmt.Sprintf("10.0.0.%d", i+1)
		for t := 0.0; ; {
			t += rng.ExpFloat64() / rate
			if t >= 1200 {
				break
			}
			out = append(out, request{start + int64(t*1e9)/1e6*1e6, key, rng.IntN(3)}) // whole ms: every format can say it
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

// exactAdmits is the exact sliding-window limit, counted here apart from
// the simulator: a request is admitted when fewer than limit admits of its
// key lie in the window before it.
func exactAdmits(reqs []request, limit int, w time.Duration) map[string]int {
	admits := map[string][]int64{}
	out := map[string]int{}
	for _, r := range reqs {
		in := 0
		for _, a := range admits[r.key] {
			if a > r.t-int64(w) {
				in++
			}
		}
		if in < limit {
			admits[r.key] = append(admits[r.key], r.t)
			out[r.key]++
		}
	}
	return out
}

// line writes r in format f, with a user agent and an API key the key may
// be taken from.
func line(f accesslog.Format, r request) string {
	ts := time.Unix(0, r.t).UTC()
	switch f {
	case accesslog.CSV:
		return fmt.Sprintf("%s,%s,gw%d", ts.Format(time.RFC3339Nano), r.key, r.gw)
	case accesslog.Combined:
		return fmt.Sprintf(`%s - - [%s] "GET /v1/items?id=3 HTTP/1.1" 200 12 "-" "agent-%s"`, r.key, ts.Format("02/Jan/2006:15:04:05 -0700"), r.key)
	case accesslog.JSON:
		return fmt.Sprintf(`{"time":"%s","remote_addr":"%s","http_x_api_key":"key-%s","node":"gw%d"}`, ts.Format(time.RFC3339Nano), r.key, r.key, r.gw)
	case accesslog.Envoy:
		return fmt.Sprintf(`[%s] "GET /v1/items HTTP/1.1" 200 - 0 12 3 2 "%s" "curl" "id" "api" "gw%d"`, ts.Format("2006-01-02T15:04:05.000Z"), r.key, r.gw)
	}
	return fmt.Sprintf(`%s - - [%s] "GET /v1/items HTTP/1.1" 200 12`, r.key, ts.Format("02/Jan/2006:15:04:05 -0700"))
}

// writeLog writes reqs as a log in format f with three bad lines, some
// lines swapped within a second and one line three minutes late, gzipped
// when gz, and returns its path.
func writeLog(t *testing.T, f accesslog.Format, reqs []request, gz bool) string {
	var lines []string
	for _, r := range reqs {
		lines = append(lines, line(f, r))
	}
	for i := 10; i+1 < len(lines); i += 97 { // disorder within the horizon
		if reqs[i+1].t-reqs[i].t < int64(time.Second) {
			lines[i], lines[i+1] = lines[i+1], lines[i]
		}
	}
	late := line(f, request{reqs[len(reqs)/2].t - int64(3*time.Minute), "10.9.9.9", 0})
	bad := []string{"not a log line", `{"broken":`, "1,2,3,4,5,6"}
	var b strings.Builder
	for i, l := range lines {
		if i%400 == 5 && i/400 < len(bad) {
			b.WriteString(bad[i/400] + "\n")
		}
		if i == len(lines)/2+5 {
			b.WriteString(late + "\n")
		}
		b.WriteString(l + "\n")
	}
	data := []byte(b.String())
	path := filepath.Join(t.TempDir(), "access.log")
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		data, path = z.Bytes(), path+".gz"
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayEveryFormat replays the same traffic written in every format
// (gzipped, with bad lines, disorder and a line three minutes late, the key
// from a header or a field) through every design, ordered whole (in memory
// and spilled to runs) and within a horizon of 2 s: the exact limit's
// admits equal an exact count made here, per key; each design's figures
// add up; the late line is replayed in its place when the log is ordered,
// and left out and counted past the horizon.
func TestReplayEveryFormat(t *testing.T) {
	reqs := traffic(7)
	want := exactAdmits(reqs, 10, time.Minute)
	for _, c := range []struct {
		f       accesslog.Format
		key     string
		gateway string
		keyOf   func(string) string
	}{
		{accesslog.CSV, "key", "column", nil},
		{accesslog.Combined, "header:User-Agent", "", func(ip string) string { return "agent-" + ip }},
		{accesslog.Common, "ip", "", nil},
		{accesslog.JSON, "field:http_x_api_key", "node", func(ip string) string { return "key-" + ip }},
		{accesslog.Envoy, "ip", "upstream-host", nil},
	} {
		for _, v := range []struct {
			name    string
			horizon time.Duration
			buffer  int
		}{{"ordered", 0, 0}, {"ordered-spilled", 0, 100}, {"horizon", 2 * time.Second, 0}} {
			t.Run(c.f.String()+"/"+v.name, func(t *testing.T) {
				key, err := accesslog.ParseKey(c.key)
				if err != nil {
					t.Fatal(err)
				}
				r, _, closeFn, err := accesslog.Open(writeLog(t, c.f, reqs, c.f != accesslog.Common), accesslog.Options{Format: c.f, Key: key, Gateway: c.gateway})
				if err != nil {
					t.Fatal(err)
				}
				defer closeFn()
				routing := FromLog
				if c.gateway == "" {
					routing = Even
				}
				got := map[string]int64{}
				rep, err := Run(r, Options{Designs: catalog.Sliding(), Gateways: 3, Sync: time.Second, Limit: Limit{10, time.Minute},
					Routing: routing, Seed: 1, Horizon: v.horizon, OrderBuffer: v.buffer, OnKey: func(k KeyResult) { got[k.Key] += k.Designs[Exact].Admitted }})
				if err != nil {
					t.Fatal(err)
				}
				late, lateKey := int64(1), int64(0) // the late line, left out past the horizon
				if v.horizon == 0 {
					late, lateKey = 0, 1 // ordered: put in its place, alone on its key
				}
				if rep.Requests != int64(len(reqs))+1-late || rep.Bad != 3 || rep.Late != late || len(rep.LateLines) != int(late) {
					t.Fatalf("%d requests (want %d), %d bad (want 3: %v), %d late (want %d)", rep.Requests, int64(len(reqs))+1-late, rep.Bad, rep.BadLines, rep.Late, late)
				}
				if v.horizon == 0 && (rep.Reordered == 0 || rep.Disorder < 3*time.Minute || (v.buffer > 0) != (rep.Runs > 1)) {
					t.Fatalf("ordered: %d lines reordered, disorder %v, %d runs", rep.Reordered, rep.Disorder, rep.Runs)
				}
				if k := "10.9.9.9"; c.keyOf != nil && got[c.keyOf(k)] != lateKey || c.keyOf == nil && got[k] != lateKey {
					t.Errorf("the late line's key: %v admitted, want %d", got, lateKey)
				}
				for ip, n := range want {
					k := ip
					if c.keyOf != nil {
						k = c.keyOf(ip)
					}
					if got[k] != int64(n) {
						t.Errorf("key %s: the exact limit admitted %d, the count here %d", k, got[k], n)
					}
				}
				ex := rep.Figures[Exact]
				if ex.FalseAdmit != 0 || ex.FalseRefus != 0 || ex.WorstWindowX > 1 {
					t.Errorf("the exact limit against itself: %+v", ex)
				}
				for _, d := range rep.Designs {
					f := rep.Figures[d]
					if f.Requests != rep.Requests || f.Admitted+f.Rejected != f.Requests || f.Admitted-ex.Admitted != f.FalseAdmit-f.FalseRefus {
						t.Errorf("%s: figures do not add up: %+v (exact %d admitted)", d, f, ex.Admitted)
					}
				}
			})
		}
	}
}

// A flood on one key through a design that lets floods through: the key is
// named among the most affected, and the worst window passes the limit.
func TestReplayNamesTheKeysMostAffected(t *testing.T) {
	var b strings.Builder
	start := int64(1796428800)
	for i := range 6000 { // 10 a second for 10 minutes on one key, 1 a minute on another
		fmt.Fprintf(&b, "%d.%03d,flood\n", start+int64(i/10), (i%10)*100)
		if i%600 == 0 {
			fmt.Fprintf(&b, "%d.050,quiet\n", start+int64(i/10))
		}
	}
	r, err := accesslog.NewReader(strings.NewReader(b.String()), accesslog.Options{Format: accesslog.CSV})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(r, Options{Designs: []string{"shared-counter"}, Gateways: 8, Sync: time.Second, Limit: Limit{100, time.Minute}, Routing: Even, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Figures["shared-counter"]
	top := rep.Affected["shared-counter"]
	if f.FalseAdmit == 0 || f.WorstWindowX <= 1 || len(top) == 0 || top[0].Key != "flood" || f.WorstKey != "flood" {
		t.Fatalf("shared-counter under a flood: %+v, most affected %+v", f, top)
	}
}

func TestReplayOptionsRefused(t *testing.T) {
	r, _ := accesslog.NewReader(strings.NewReader(""), accesslog.Options{Format: accesslog.CSV})
	for _, opt := range []Options{
		{Gateways: 0, Limit: Limit{1, time.Second}, Routing: Even},
		{Gateways: 2, Limit: Limit{0, time.Second}, Routing: Even},
		{Gateways: 2, Limit: Limit{1, time.Second}},
		{Gateways: 2, Limit: Limit{1, time.Second}, Routing: Even, Speed: -1},
		{Gateways: 2, Limit: Limit{1, time.Second}, Routing: Even, Designs: []string{"magic"}},
		{Gateways: 2, Limit: Limit{1, time.Second}, Routing: Even, Designs: []string{"central-counter"}},
	} {
		if _, err := Run(r, opt); err == nil {
			t.Errorf("%+v was taken", opt)
		}
	}
}
