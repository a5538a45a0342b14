package fleetlimitcaddy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/internal/redistest"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// buildCaddy builds this module's Caddy, as a user would, into dir.
func buildCaddy(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "caddy")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/caddy").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/caddy: %v\n%s", err, out)
	}
	return bin
}

// caddyProc is one Caddy process of a fleet.
type caddyProc struct {
	cmd        *exec.Cmd
	url, admin string
	config     string
	log        bytes.Buffer
}

// fleetCaddyfile is gateway i's configuration, answering body.
func fleetCaddyfile(t *testing.T, port, admin, i int, redisAddr, dsg, body string) string {
	return fmt.Sprintf(`{
	admin 127.0.0.1:%d
	auto_https off
	persist_config off
	http_port %d
	default_bind 127.0.0.1
	storage file_system %s
}
http://127.0.0.1:%d {
	fleetlimit {
		zone api {
			key {http.request.header.X-API-Key}
			limit %d
			window 1m
			design %s
			sync 200ms
		}
		redis %s {
			prefix fleet-%s:
		}
		gateways 3
		gateway %d
		timeout 5s
	}
	respond %q
}
`, admin, port, t.TempDir(), port, fleetLimit, dsg, redisAddr, dsg, i, body)
}

const fleetLimit = 100

// startCaddy runs bin on a Caddyfile and waits until it answers.
func startCaddy(t *testing.T, bin string, i int, redisAddr, dsg string) *caddyProc {
	t.Helper()
	port, admin := freePort(t), freePort(t)
	p := &caddyProc{url: fmt.Sprintf("http://127.0.0.1:%d/", port), admin: fmt.Sprintf("http://127.0.0.1:%d", admin)}
	p.config = fleetCaddyfile(t, port, admin, i, redisAddr, dsg, "v1")
	file := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(file, []byte(p.config), 0o644); err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	for range 300 { // up to 30 s
		if r, err := http.Get(p.url); err == nil {
			r.Body.Close()
			return p
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("caddy %d did not answer in 30 s:\n%s", i, p.log.String())
	return nil
}

// stop stops p as an operator would (SIGINT), which closes its limiters
// and so flushes their admits, and waits for it.
func (p *caddyProc) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("caddy did not stop within 20 s:\n%s", p.log.String())
	}
}

// Three Caddy processes built by this module's cmd share one limit on a
// real redis-server, and one of them reloads its configuration twice
// under load. central-log admits exactly L; headroom admits within its bound
// (L + Σ B_j, at most 2 L + K when nothing is known of the gateways'
// shares); and for both, Redis holds exactly the admits the clients were
// told of once the processes have stopped: the reload lost no count.
func TestCaddyFleetOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCaddy(t, t.TempDir())
	for _, dsg := range []string{"central-log", "headroom"} {
		t.Run(dsg, func(t *testing.T) {
			var ps []*caddyProc
			for i := range 3 {
				ps = append(ps, startCaddy(t, bin, i, srv.Addr, dsg))
			}
			var ok, over, resets, reloading atomic.Int64
			var okBy [3]atomic.Int64 // admits told, by process
			stopAt := time.Now().Add(3500 * time.Millisecond)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					c := &http.Client{Timeout: 10 * time.Second}
					for i := 0; time.Now().Before(stopAt) && i < 100_000; i++ {
						req, _ := http.NewRequest("GET", ps[(g+i)%3].url, nil)
						req.Header.Set("X-API-Key", "shared")
						r, err := c.Do(req)
						if err != nil {
							// Caddy's reload resets the connections still
							// waiting in the old listener's queue, unread:
							// the client tries again, and Redis's count below
							// shows that none of them was counted
							resets.Add(1)
							continue
						}
						r.Body.Close()
						switch r.StatusCode {
						case 200:
							ok.Add(1)
							okBy[(g+i)%3].Add(1)
						case 429:
							over.Add(1)
						case 503:
							// the request reached the old handler after
							// the reload had closed its limiter: counted
							// nowhere (the Redis count below shows it),
							// and the client may try again at once
							reloading.Add(1)
						default:
							t.Errorf("status %d", r.StatusCode)
							return
						}
					}
				})
			}
			// two reloads under load: one that keeps the zone (its limiter
			// goes on), one that changes its sync interval (the old limiter
			// is closed, flushing its admits, and a new one made)
			time.Sleep(1000 * time.Millisecond)
			reload(t, ps[0], strings.Replace(ps[0].config, `respond "v1"`, `respond "v2"`, 1))
			time.Sleep(1000 * time.Millisecond)
			reload(t, ps[0], strings.Replace(strings.Replace(ps[0].config, `respond "v1"`, `respond "v2"`, 1), "sync 200ms", "sync 300ms", 1))
			wg.Wait()
			if r, err := http.Get(ps[0].url); err != nil {
				t.Fatal(err)
			} else {
				var b bytes.Buffer
				b.ReadFrom(r.Body)
				r.Body.Close()
				if b.String() != "v2" {
					t.Fatalf("after the reload caddy 0 answers %q, want v2", b.String())
				}
			}
			for _, p := range ps {
				p.stop(t)
			}
			stored := storedAdmits(t, srv.Addr, "fleet-"+dsg+":api:", "shared")
			admitted := ok.Load()
			t.Logf("%s: %d admitted, %d over the limit, %d admits in Redis, %d connections reset and %d requests refused (503) by the reload; L = %d",
				dsg, admitted, over.Load(), stored, resets.Load(), reloading.Load(), fleetLimit)
			if int64(stored) != admitted {
				t.Errorf("Redis holds %d admits, clients were told of %d", stored, admitted)
				t.Logf("admits told by caddy 0, 1, 2: %d, %d, %d; Redis's members:\n%s", okBy[0].Load(), okBy[1].Load(), okBy[2].Load(),
					members(t, srv.Addr, "fleet-"+dsg+":api:"))
				for i, p := range ps {
					t.Logf("caddy %d's fleetlimit lines:\n%s", i, grepLines(p.log.String(), "fleetlimit"))
				}
			}
			switch {
			case dsg == "central-log" && admitted != fleetLimit:
				t.Errorf("central-log admitted %d, want exactly L = %d", admitted, fleetLimit)
			case admitted > 2*fleetLimit+3:
				t.Errorf("%s admitted %d, past its bound 2 L + K = %d", dsg, admitted, 2*fleetLimit+3)
			case over.Load() == 0:
				t.Errorf("no request was over the limit: the load did not reach it")
			}
		})
	}
}

// reload gives p a new configuration through its admin endpoint.
func reload(t *testing.T, p *caddyProc, caddyfile string) {
	t.Helper()
	req, _ := http.NewRequest("POST", p.admin+"/load", strings.NewReader(caddyfile))
	req.Header.Set("Content-Type", "text/caddyfile")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		t.Fatalf("reload: %d %s", r.StatusCode, b.String())
	}
}

// storedAdmits counts the admits Redis holds under prefix for the key
// named key (the probes that wait for a process ask without a key).
// members lists the members of every sorted set under prefix, one line each.
func members(t *testing.T, addr, prefix string) string {
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := redisinspect.Of(st).Client()
	keys, _ := c.Keys(context.Background(), prefix+"*").Result()
	var b strings.Builder
	for _, k := range keys {
		ms, _ := c.ZRange(context.Background(), k, 0, -1).Result()
		h, _ := c.HGetAll(context.Background(), k).Result()
		fmt.Fprintf(&b, "%s: %v %v\n", k, ms, h)
	}
	return b.String()
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func storedAdmits(t *testing.T, addr, prefix, key string) int {
	t.Helper()
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := redisinspect.Of(st).Client().Keys(context.Background(), prefix+"{*}:z").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		name := k[strings.IndexByte(k, '{')+1 : strings.LastIndexByte(k, '}')]
		if !strings.HasSuffix(name, key) {
			continue
		}
		t.Logf("Redis key %q", k)
		s, err := redisinspect.Of(st).Stamps(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		n += len(s)
	}
	if len(keys) == 0 {
		t.Fatalf("no key under %q in Redis", prefix)
	}
	return n
}
