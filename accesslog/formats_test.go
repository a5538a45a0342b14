package accesslog

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Each test file holds the same three requests, written as its format's
// specification says: 192.0.2.10, 192.0.2.11, then 192.0.2.10 again, which
// came first (a log written as requests end is out of order); the formats
// that say when a request began give 12:00:01.25, 12:00:02.5 and
// 12:00:00.75 (ALB's request_creation_time; Caddy's and CloudFront's end
// less the time taken), the others whole seconds.
func TestDetectAndReadEveryFormat(t *testing.T) {
	base := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, base.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	exact, whole := at(1250, 2500, 750), at(1000, 2000, 0)
	paths := []string{"/v1/items", "/v1/orders", "/v1/items/7"}
	for _, c := range []struct {
		file   string
		want   Format
		times  []time.Time
		more   string   // another key spec
		values []string // its values
	}{
		{"common.log", Common, whole, "user", nil},
		{"combined.log", Combined, whole, "path", paths},
		{"envoy.log", Envoy, exact, "path", paths},
		{"nginx.jsonl", JSON, whole, "field:http_user_agent", []string{"curl/8.5.0", "Mozilla/5.0", "curl/8.5.0"}},
		{"envoy.jsonl", JSON, exact, "field:path", paths},
		{"caddy.jsonl", Caddy, exact, "path", paths},
		{"requests.csv", CSV, whole, "", nil},
		{"alb.log", ALB, exact, "path", paths},
		{"cloudfront.log", CloudFront, exact, "header:User-Agent", []string{"curl/8.5.0", "Mozilla/5.0%20(X11;%20Linux%20x86_64)", "curl/8.5.0"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "formats", c.file)
			lines := readFile(t, path, Options{})
			r, _, closeFn, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			closeFn()
			if r.Format() != c.want || !r.Detected() {
				t.Fatalf("detected %v (detected %v), want %v", r.Format(), r.Detected(), c.want)
			}
			if len(lines) != 3 {
				t.Fatalf("%d requests read, want 3", len(lines))
			}
			for i, l := range lines {
				if want := []string{"192.0.2.10", "192.0.2.11", "192.0.2.10"}[i]; l.Key != want {
					t.Errorf("request %d: key %q, want %q", i+1, l.Key, want)
				}
				if got := time.Unix(0, l.Time).UTC(); !got.Equal(c.times[i]) {
					t.Errorf("request %d: time %v, want %v", i+1, got, c.times[i])
				}
			}
			if c.more == "" {
				return
			}
			k, err := ParseKey(c.more)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range readFile(t, path, Options{Key: k}) {
				want := "alice"
				if c.values != nil {
					want = c.values[i]
				} else if i != 1 {
					continue // no user: a bad line
				}
				if l.Key != want {
					t.Errorf("key %s of request %d: %q, want %q", c.more, i+1, l.Key, want)
				}
			}
		})
	}
}

// readFile reads every request of the log at path.
func readFile(t *testing.T, path string, opt Options) []Line {
	t.Helper()
	r, _, closeFn, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var out []Line
	for {
		var l Line
		err := r.Next(&l)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
}

// A file of two formats is refused, naming a line of each.
func TestDetectRefusesAMix(t *testing.T) {
	_, _, _, err := Open(filepath.Join("testdata", "formats", "mixed.log"), Options{})
	if err == nil || !strings.Contains(err.Error(), "line 1 is combined, line 3 is json") {
		t.Fatalf("a mixed file: %v", err)
	}
	if _, err := NewReader(strings.NewReader("hello\nworld\n"), Options{}); err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Fatalf("a file of no format: %v", err)
	}
}

// A log given a format reads as that format, whatever its first lines
// look like; lines in another format are bad lines.
func TestGivenFormatIsNotDetected(t *testing.T) {
	path := filepath.Join("testdata", "formats", "mixed.log")
	r, _, closeFn, err := Open(path, Options{Format: Combined})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	n := 0
	for l := (Line{}); r.Next(&l) == nil; {
		n++
	}
	if bad, _ := r.Bad(); n != 2 || bad != 1 || r.Detected() {
		t.Fatalf("%d read, %d bad, detected %v", n, bad, r.Detected())
	}
}

// stdin and zstd: a compressed log through a pipe reads as the file does.
func TestZstdThroughStdin(t *testing.T) {
	src := filepath.Join("testdata", "formats", "alb.log")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	zpath := filepath.Join(t.TempDir(), "alb.log.zst")
	if err := os.WriteFile(zpath, zstdOf(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(zpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	got := readFile(t, "-", Options{})
	want := readFile(t, src, Options{})
	if len(got) != 3 || len(got) != len(want) {
		t.Fatalf("%d lines from stdin, %d from the file", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v from stdin, %+v from the file", i+1, got[i], want[i])
		}
	}
}

func zstdOf(t *testing.T, data []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}
