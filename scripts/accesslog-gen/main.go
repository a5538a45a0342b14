// Command accesslog-gen writes a synthetic access log in the Combined Log
// Format, for fleetlimit replay's docs and benchmarks: an hour of a web
// shop's traffic from a seed. Nothing in it comes from a real server; it
// stands in for one where none may be redistributed.
//
//	go run ./scripts/accesslog-gen -out /tmp/shop.log.gz
//
// Clients browse in page views (a page and its assets within two seconds),
// each at its own rate (log-normal, a median of one view in ten minutes); a
// few API clients call steadily; a scraper floods from minute 20 to 30.
//
// With -lines it writes instead a CSV log (time,key) of that many requests
// in Poisson arrivals over -duration, each by one of -keys keys drawn by
// Zipf's law (s = 1.1): the long logs replay's benchmarks take.
//
//	go run ./scripts/accesslog-gen -lines 1000000 -keys 100000 -duration 96h -out /tmp/log1m.csv
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"
)

type hit struct {
	t    time.Time
	line string
}

func main() {
	out := flag.String("out", "", "file to write (.gz: gzipped); default stdout")
	seed := flag.Uint64("seed", 1, "seed")
	clients := flag.Int("clients", 3000, "browsing clients")
	span := flag.Duration("duration", time.Hour, "the log's span")
	lines := flag.Int("lines", 0, "write a CSV log of this many requests instead (time,key)")
	keys := flag.Int("keys", 100000, "with -lines: the keys, by Zipf's law")
	flag.Parse()
	if *lines < 0 || *keys < 2 || *span <= 0 {
		log.Fatal("want -lines of 0 or more, -keys of 2 or more and a positive -duration")
	}
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		w = f
		if strings.HasSuffix(*out, ".gz") {
			zw := gzip.NewWriter(f)
			defer zw.Close()
			w = zw
		}
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	if *lines > 0 {
		writeCSV(bw, *seed, *lines, *keys, *span)
		return
	}
	for _, h := range generate(*seed, *clients, *span) {
		fmt.Fprintln(bw, h.line)
	}
}

var (
	pages  = []string{"/", "/products", "/products/%d", "/cart", "/search?q=%d", "/account"}
	assets = []string{"/static/app.js", "/static/app.css", "/static/logo.png", "/static/img/%d.jpg", "/favicon.ico"}
	agents = []string{"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0", "Mozilla/5.0 (Macintosh) Safari/605.1.15",
		"Mozilla/5.0 (Windows NT 10.0) Chrome/131.0", "Mozilla/5.0 (iPhone) Mobile Safari/604.1"}
)

func generate(seed uint64, clients int, span time.Duration) []hit {
	rng := rand.New(rand.NewPCG(seed, 2))
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var hits []hit
	add := func(ip string, at float64, path, ua string, status int) {
		t := start.Add(time.Duration(at * float64(time.Second)))
		hits = append(hits, hit{t, fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d %d "-" "%s"`,
			ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status, 200+rng.IntN(40000), ua)})
	}
	fill := func(p string) string {
		if strings.Contains(p, "%d") {
			return fmt.Sprintf(p, rng.IntN(500))
		}
		return p
	}
	secs := span.Seconds()
	for c := range clients {
		ip := fmt.Sprintf("10.%d.%d.%d", 1+c/65536, c/256%256, c%256)
		ua := agents[rng.IntN(len(agents))]
		rate := math.Exp(rng.NormFloat64()*1.2) / 600 // page views a second
		for t := rng.ExpFloat64() / rate; t < secs; t += rng.ExpFloat64() / rate {
			add(ip, t, fill(pages[rng.IntN(len(pages))]), ua, 200)
			for n := rng.IntN(16); n > 0; n-- {
				add(ip, t+rng.Float64()*2, fill(assets[rng.IntN(len(assets))]), ua, 200)
			}
		}
	}
	for a := range 3 { // API clients, about one call a second each
		ip := fmt.Sprintf("172.16.0.%d", a+1)
		for t := rng.ExpFloat64(); t < secs; t += rng.ExpFloat64() * (0.5 + float64(a)) {
			add(ip, t, fmt.Sprintf("/api/v1/stock/%d", rng.IntN(500)), "shop-sync/2.1", 200)
		}
	}
	for t := 1200.0; t < min(1800, secs); t += rng.ExpFloat64() / 20 { // a scraper, 20 a second
		add("192.0.2.66", t, fmt.Sprintf("/products/%d", rng.IntN(5000)), "python-requests/2.32", 200)
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].t.Before(hits[j].t) })
	return hits
}

// writeCSV writes n requests of keys keys (Zipf, s = 1.1) in Poisson
// arrivals spanning about span, in time order.
func writeCSV(w io.Writer, seed uint64, n, keys int, span time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 3))
	z := rand.NewZipf(rng, 1.1, 1, uint64(keys-1))
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMilli()
	mean := float64(span.Milliseconds()) / float64(n)
	t := 0.0
	for range n {
		t += rng.ExpFloat64() * mean
		ms := start + int64(t)
		fmt.Fprintf(w, "%d.%03d,k%d\n", ms/1000, ms%1000, z.Uint64())
	}
}
