package accesslog

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readAll(t *testing.T, src string, opt Options) ([]Line, *Reader) {
	t.Helper()
	r, err := NewReader(strings.NewReader(src), opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []Line
	for {
		var l Line
		err := r.Next(&l)
		if err == io.EOF {
			return out, r
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixNano()
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		name, src, key string
		opt            Options
		want           []Line
	}{
		{"common", `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326` + "\n",
			"ip+path", Options{Format: Common}, []Line{{Number: 1, Time: at("2000-10-10T20:55:36Z"), Key: "127.0.0.1+/apache_pb.gif", Cost: 1}}},
		{"combined with a header key", `10.0.0.7 - - [04/Dec/2026:12:00:01 +0000] "POST /v1/users/42/orders HTTP/1.1" 201 17 "-" "curl/8.5.0"` + "\n",
			"header:User-Agent+path:2", Options{Format: Combined}, []Line{{Number: 1, Time: at("2026-12-04T12:00:01Z"), Key: "curl/8.5.0+/v1/users", Cost: 1}}},
		{"envoy", `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28, 10.0.0.1" "nsq2http" "cc21d9b0" "locations" "tcp://10.0.2.1:80"` + "\n",
			"ip", Options{Format: Envoy, Gateway: "upstream-host"}, []Line{{Number: 1, Time: at("2016-04-15T20:17:00.310Z"), Key: "10.0.35.28", Gateway: "tcp://10.0.2.1:80", Cost: 1}}},
		{"json with a header field", `{"time":"2026-12-04T12:00:00.5Z","http_x_api_key":"k1","node":"gw-2","uri":"/a/b/c"}` + "\n" +
			`{"time":1796428800.25,"http_x_api_key":"k2","node":"gw-1","uri":"/a"}` + "\n",
			"field:http_x_api_key+prefix:uri:1", Options{Format: JSON, Gateway: "node"}, []Line{
				{Number: 1, Time: at("2026-12-04T12:00:00.5Z"), Key: "k1+/a", Gateway: "gw-2", Cost: 1},
				{Number: 2, Time: 1796428800250000000, Key: "k2+/a", Gateway: "gw-1", Cost: 1}}},
		{"csv", "time,key,gateway,cost\n1796428800.5,alice,g1,3\n2026-12-04T12:00:01Z,\"bob, jr\",g2\n",
			"key", Options{Format: CSV, Gateway: "column"}, []Line{
				{Number: 2, Time: 1796428800500000000, Key: "alice", Gateway: "g1", Cost: 3},
				{Number: 3, Time: at("2026-12-04T12:00:01Z"), Key: "bob, jr", Gateway: "g2", Cost: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := ParseKey(c.key)
			if err != nil {
				t.Fatal(err)
			}
			c.opt.Key = k
			got, r := readAll(t, c.src, c.opt)
			if n, bad := r.Bad(); n != 0 {
				t.Fatalf("bad lines: %v", bad)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("line %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestBadLinesAreCountedWithTheirNumbers(t *testing.T) {
	src := strings.Join([]string{
		`10.0.0.1 - - [04/Dec/2026:12:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
		`garbage`,
		`10.0.0.1 - - [04/Dec/2026:99:00:01 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
		``,
		`- - - [04/Dec/2026:12:00:02 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
		`10.0.0.2 - - [04/Dec/2026:12:00:03 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"`,
	}, "\n")
	got, r := readAll(t, src, Options{Format: Combined})
	n, bad := r.Bad()
	if len(got) != 2 || n != 3 || bad[0].Number != 2 || bad[1].Number != 3 || bad[2].Number != 5 || !strings.Contains(bad[2].Reason, "no ip") {
		t.Fatalf("read %d lines, %d bad: %+v", len(got), n, bad)
	}
	r, _ = NewReader(strings.NewReader(src), Options{Format: Combined, MaxBad: 2})
	var l Line
	var err error
	for err == nil {
		err = r.Next(&l)
	}
	if err == io.EOF || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("with MaxBad 2: %v, want an error at line 3", err)
	}
}

func TestGzipIsReadAsItIs(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("1796428800,a\n1796428801,b\n"))
	zw.Close()
	path := filepath.Join(t.TempDir(), "log.csv.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, size, closeFn, err := Open(path, Options{Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var keys []string
	var l Line
	for r.Next(&l) == nil {
		keys = append(keys, l.Key)
	}
	if strings.Join(keys, ",") != "a,b" || size != int64(b.Len()) || r.Read() != size {
		t.Fatalf("keys %v, size %d, read %d", keys, size, r.Read())
	}
}

func TestKeysAFormatCannotGiveAreRefused(t *testing.T) {
	for _, c := range []struct {
		f   Format
		key string
	}{{Common, "header:User-Agent"}, {CSV, "ip"}, {JSON, "path"}, {Envoy, "user"}, {Combined, "field:x"}} {
		k, err := ParseKey(c.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewReader(strings.NewReader(""), Options{Format: c.f, Key: k}); err == nil {
			t.Errorf("%v with key %s was taken", c.f, c.key)
		}
	}
	for _, bad := range []string{"", "ip:1", "path:0", "header:", "prefix:uri", "nose"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("key %q was taken", bad)
		}
	}
}
