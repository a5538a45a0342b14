package replay

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/accesslog"
)

// benchLog is n lines of a log in format f: 1,000 keys of Zipf-like
// activity over an hour, in time order.
func benchLog(f accesslog.Format, n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	z := rand.NewZipf(rng, 1.1, 1, 999)
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	for i := range n {
		t := start.Add(time.Duration(int64(i) * int64(time.Hour) / int64(n)))
		key := fmt.Sprintf("10.0.%d.%d", z.Uint64()/256, z.Uint64()%256)
		switch f {
		case accesslog.CSV:
			fmt.Fprintf(&b, "%d.%03d,%s\n", t.Unix(), t.Nanosecond()/1e6, key)
		default:
			fmt.Fprintf(&b, `%s - - [%s] "GET /products/%d HTTP/1.1" 200 1234 "-" "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0"`+"\n",
				key, t.Format("02/Jan/2006:15:04:05 -0700"), i%500)
		}
	}
	return b.Bytes()
}

// BenchmarkParse reads a log, parsing only: lines/s per core.
func BenchmarkParse(b *testing.B) {
	for _, f := range []accesslog.Format{accesslog.CSV, accesslog.Combined} {
		b.Run(f.String(), func(b *testing.B) {
			data := benchLog(f, 200_000)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r, _ := accesslog.NewReader(bytes.NewReader(data), accesslog.Options{Format: f})
				var l accesslog.Line
				for r.Next(&l) != io.EOF {
				}
			}
			b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkReplay parses and replays a log through one design (and the
// exact limit, which always runs): lines/s per core.
func BenchmarkReplay(b *testing.B) {
	for _, f := range []accesslog.Format{accesslog.CSV, accesslog.Combined} {
		b.Run(f.String(), func(b *testing.B) {
			data := benchLog(f, 200_000)
			for b.Loop() {
				r, _ := accesslog.NewReader(bytes.NewReader(data), accesslog.Options{Format: f})
				if _, err := Run(r, Options{Designs: []string{"shared-counter"}, Gateways: 8, Sync: time.Second,
					Limit: Limit{100, time.Minute}, Routing: Even, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
