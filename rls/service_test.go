package rls

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fleetlimit/fleetlimit/limiter"
)

const testConfig = `
domain: d
descriptors:
  - key: user
    rate_limit:
      name: per-user
      unit: minute
      requests_per_unit: 3
  - key: vip
    rate_limit:
      unit: minute
      requests_per_unit: 100
      replaces:
        - name: per-user
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: free
    rate_limit:
      unlimited: true
  - key: closed
    rate_limit:
      unit: minute
      requests_per_unit: 0
fleetlimit:
  response_headers: true
`

// serve starts the service on a loopback gRPC server and returns a client.
func serve(t *testing.T, src string) (pb.RateLimitServiceClient, *Service) {
	t.Helper()
	return serveWith(t, src, limiter.Config{Sync: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// serveWith is serve on a limiter configured by lc.
func serveWith(t *testing.T, src string, lc limiter.Config) (pb.RateLimitServiceClient, *Service) {
	t.Helper()
	cfg := parse(t, src)
	lim, err := limiter.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(cfg, lim)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(gs, svc)
	go gs.Serve(l)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); gs.Stop(); svc.Close(); lim.Close() })
	return pb.NewRateLimitServiceClient(conn), svc
}

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func call(t *testing.T, c pb.RateLimitServiceClient, req *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.ShouldRateLimit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestShouldRateLimit(t *testing.T) {
	c, _ := serve(t, testConfig)
	req := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "alice")}}
	for i := 0; i < 3; i++ {
		r := call(t, c, req)
		st := r.Statuses[0]
		if r.OverallCode != pb.RateLimitResponse_OK || st.LimitRemaining != uint32(2-i) ||
			st.CurrentLimit.GetRequestsPerUnit() != 3 || st.CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_MINUTE ||
			st.CurrentLimit.GetName() != "per-user" || st.DurationUntilReset.AsDuration() <= 0 || st.DurationUntilReset.AsDuration() > time.Minute {
			t.Fatalf("request %d: %v", i, r)
		}
	}
	r := call(t, c, req)
	if r.OverallCode != pb.RateLimitResponse_OVER_LIMIT || r.Statuses[0].Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("fourth: %v", r)
	}
	hd := map[string]string{}
	for _, h := range r.ResponseHeadersToAdd {
		hd[h.Key] = h.Value
	}
	// The draft's structured fields by default; t is the fixed window's end.
	reset := r.Statuses[0].DurationUntilReset.AsDuration()
	if hd["RateLimit-Policy"] != `"per-user";q=3;w=60` || hd["RateLimit"] != fmt.Sprintf(`"per-user";r=0;t=%d`, int(reset.Seconds())) || len(hd) != 2 {
		t.Fatalf("headers %v", hd)
	}
}

// Each distinct descriptor value has its own counter, also when the limit
// comes from a key-only (any value) entry.
func TestEachValueCountsApart(t *testing.T) {
	c, _ := serve(t, testConfig)
	for _, user := range []string{"u1", "u2", "u3"} {
		for i := 0; i < 3; i++ {
			r := call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", user)}})
			if r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].LimitRemaining != uint32(2-i) {
				t.Fatalf("%s request %d: %v", user, i, r)
			}
		}
	}
}

func TestDescriptorsTogether(t *testing.T) {
	c, _ := serve(t, testConfig)
	// hits_addend on the request; a second descriptor with no limit is OK.
	r := call(t, c, &pb.RateLimitRequest{Domain: "d", HitsAddend: 3,
		Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "bob"), desc("nothing", "x")}})
	if r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].LimitRemaining != 0 || r.Statuses[1].CurrentLimit != nil {
		t.Fatalf("hits_addend 3: %v", r)
	}
	// per-descriptor hits_addend overrides the request's.
	d := desc("user", "carol")
	d.HitsAddend = wrapperspb.UInt64(4)
	if r = call(t, c, &pb.RateLimitRequest{Domain: "d", HitsAddend: 1, Descriptors: []*rlv3.RateLimitDescriptor{d}}); r.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("4 hits on a limit of 3: %v", r)
	}
	// replaces: the vip limit lifts per-user for this request.
	for i := 0; i < 5; i++ {
		r = call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "dave"), desc("vip", "dave")}})
	}
	if r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].CurrentLimit != nil || r.Statuses[1].CurrentLimit.GetRequestsPerUnit() != 100 {
		t.Fatalf("replaces: %v", r)
	}
	// shadow mode: counted, never over.
	for i := 0; i < 3; i++ {
		r = call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("shadow", "x")}})
	}
	if r.OverallCode != pb.RateLimitResponse_OK || r.Statuses[0].Code != pb.RateLimitResponse_OK {
		t.Fatalf("shadow: %v", r)
	}
	// unlimited, and requests_per_unit 0.
	r = call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("free", "x"), desc("closed", "x")}})
	if r.Statuses[0].Code != pb.RateLimitResponse_OK || r.Statuses[0].LimitRemaining != 1<<32-1 || r.Statuses[1].Code != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("unlimited and zero: %v", r)
	}
	// a limit override in the request.
	o := desc("anything", "x")
	o.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_HOUR}
	call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{o}})
	r = call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{o}})
	if r.OverallCode != pb.RateLimitResponse_OVER_LIMIT || r.Statuses[0].CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_HOUR {
		t.Fatalf("override: %v", r)
	}
}

func TestBadRequests(t *testing.T) {
	c, _ := serve(t, testConfig)
	for _, req := range []*pb.RateLimitRequest{{Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}}, {Domain: "d"}} {
		if _, err := c.ShouldRateLimit(context.Background(), req); err == nil {
			t.Errorf("%v accepted", req)
		}
	}
}

func TestHTTPAPI(t *testing.T) {
	_, svc := serve(t, testConfig)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	body := `{"domain":"d","descriptors":[{"entries":[{"key":"user","value":"erin"}]}]}`
	codes := ""
	for i := 0; i < 4; i++ {
		resp, err := http.Post(srv.URL+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes += resp.Status[:3] + " "
		if i == 0 && !strings.Contains(string(b), `"limitRemaining":2`) {
			t.Fatalf("body %s", b)
		}
	}
	if codes != "200 200 200 429 " {
		t.Fatalf("codes %s", codes)
	}
	for path, want := range map[string]string{"/healthcheck": "OK", "/metrics": `fleetlimit_decisions_total{domain="d",outcome="over"} 1`,
		"/metrics?": `fleetlimit_limit_decisions_total{limit="d.user",outcome="over"} 1`} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Fatalf("%s: %s", path, b)
		}
	}
	resp, _ := http.Post(srv.URL+"/json", "application/json", strings.NewReader("{nope"))
	if resp.StatusCode != 400 {
		t.Fatalf("bad JSON: %d", resp.StatusCode)
	}
}

func TestReloadKeepsServingAndRejectsBadFiles(t *testing.T) {
	path := t.TempDir() + "/limits.yaml"
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lim, _ := limiter.New(limiter.Config{Sync: time.Hour})
	defer lim.Close()
	svc := NewService(cfg, lim)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, Source{Path: path}, svc, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Millisecond)
	limitNow := func() uint32 {
		r, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "v")}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Statuses[0].CurrentLimit.GetRequestsPerUnit()
	}
	waitFor := func(want uint32) {
		deadline := time.Now().Add(5 * time.Second)
		for limitNow() != want {
			if time.Now().After(deadline) {
				t.Fatalf("limit did not become %d", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(5)
	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 9}\n")
	waitFor(9)
	write("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n")
	time.Sleep(100 * time.Millisecond)
	if got := limitNow(); got != 9 {
		t.Fatalf("an invalid file replaced the config: limit %d", got)
	}
}

func FuzzShouldRateLimit(f *testing.F) {
	seed := &pb.RateLimitRequest{Domain: "d", HitsAddend: 2, Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "a"), desc("vip", "b")}}
	b, _ := proto.Marshal(seed)
	f.Add(b)
	f.Add([]byte{})
	cfg, err := Parse("fuzz", strings.NewReader(testConfig))
	if err != nil {
		f.Fatal(err)
	}
	lim, _ := limiter.New(limiter.Config{Sync: time.Hour, MaxKeys: 1000})
	defer lim.Close()
	svc := NewService(cfg, lim)
	f.Fuzz(func(t *testing.T, data []byte) {
		var req pb.RateLimitRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		resp, err := svc.ShouldRateLimit(context.Background(), &req)
		if err == nil && len(resp.Statuses) != len(req.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
	})
}

// detailed_metric adds the request's value to the limit's metric name, as
// envoyproxy/ratelimit does for its stats.
func TestDetailedMetric(t *testing.T) {
	c, svc := serve(t, "domain: d\ndescriptors:\n  - key: k\n    detailed_metric: true\n    rate_limit: {unit: minute, requests_per_unit: 5}\n  - key: plain\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("k", "v1"), desc("plain", "v2")}})
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`limit="d.k_v1"`, `limit="d.plain"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(b), `limit="d.plain_v2"`) {
		t.Error("a limit without detailed_metric names the request's value")
	}
}

// A reload that changes a limit keeps what each key has used, as
// envoyproxy/ratelimit keeps its counters: from 5 to 7 an hour after 4
// admits leaves 3, not 7.
func TestLimitChangeKeepsCounts(t *testing.T) {
	for _, design := range []string{"shared-counter", "central-log", "lease-ask"} {
		t.Run(design, func(t *testing.T) {
			conf := func(n int) string {
				return "domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: hour\n      requests_per_unit: " +
					strconv.Itoa(n) + "\nfleetlimit:\n  design: " + design + "\n"
			}
			lc := parse(t, conf(5)).Settings.Limiter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			lc.Sync = time.Hour
			c, svc := serveWith(t, conf(5), lc)
			req := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", "alice")}}
			admitted := func(n int) int {
				ok := 0
				for i := 0; i < n; i++ {
					if call(t, c, req).OverallCode == pb.RateLimitResponse_OK {
						ok++
					}
				}
				return ok
			}
			if n := admitted(4); n != 4 {
				t.Fatalf("admitted %d of 4 under a limit of 5", n)
			}
			svc.SetConfig(parse(t, conf(7)))
			if n := admitted(10); n != 3 {
				t.Fatalf("after the limit went from 5 to 7, admitted %d more, want 3", n)
			}
		})
	}
}

// Clients cannot mint metric series: 3,000 distinct override values, 3,000
// unknown domains and 3,000 values of a detailed_metric limit leave a
// bounded /metrics, and no request value of an override appears in it.
func TestMetricSeriesAreBounded(t *testing.T) {
	src := "domain: d\ndescriptors:\n  - key: user\n    detailed_metric: true\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n"
	c, svc := serve(t, src)
	for i := 0; i < 3000; i++ {
		v := "secret-api-key-" + strconv.Itoa(i)
		o := desc("api_key", v)
		o.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 10, Unit: typev3.RateLimitUnit_MINUTE}
		call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{o}})
		call(t, c, &pb.RateLimitRequest{Domain: "dom-" + strconv.Itoa(i), Descriptors: []*rlv3.RateLimitDescriptor{o}})
		call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{desc("user", v)}})
	}
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	series := 0
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "fleetlimit_") {
			series++
		}
	}
	if series > MaxDetailedSeries*3+100 {
		t.Fatalf("%d metric series after 9,000 requests with distinct values", series)
	}
	if strings.Contains(body, "secret-api-key-2999") || strings.Contains(body, "dom-") {
		t.Fatal("an override's request value or a client's domain appears in /metrics")
	}
	if !strings.Contains(body, `limit="d.user_other"`) || !strings.Contains(body, `limit="d.override"`) {
		t.Fatal("the capped series are missing")
	}
}

// A client that sends its body slowly is cut off at the read timeout, and
// the service answers others meanwhile.
func TestSlowClientsAreCutOff(t *testing.T) {
	_, svc := serve(t, testConfig)
	hs := svc.HTTPServer(HTTPTimeouts{Read: 300 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(l)
	defer hs.Close()
	var slow []net.Conn
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
		slow = append(slow, c)
	}
	resp, err := http.Get("http://" + l.Addr().String() + "/healthcheck")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthcheck while 20 clients trickle: %v %v", resp, err)
	}
	resp.Body.Close()
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				break // closed by the server (or answered and closed)
			}
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("slow client %d was held %v with a 300ms read timeout", i, waited)
		}
	}
}

// One unauthenticated request with the largest hits_addend and override
// gets a clear answer and leaves the service's memory as it was.
func TestHugeRequestIsAnswered(t *testing.T) {
	c, _ := serve(t, testConfig)
	o := desc("api_key", "x")
	o.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1<<32 - 1, Unit: typev3.RateLimitUnit_YEAR}
	o.HitsAddend = wrapperspb.UInt64(1<<63 - 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 3; i++ {
		r := call(t, c, &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{o}, HitsAddend: 1<<32 - 1})
		want := pb.RateLimitResponse_OK
		if i == 2 { // two of 2^31-1 fit in 2^32-1, a third does not
			want = pb.RateLimitResponse_OVER_LIMIT
		}
		if r.OverallCode != want {
			t.Fatalf("request %d: %v, want %v", i, r.OverallCode, want)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Fatalf("three huge requests grew the heap by %d bytes", grew)
	}
}
