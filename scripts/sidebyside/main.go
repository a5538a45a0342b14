// Command sidebyside measures fleetlimit serve and envoyproxy/ratelimit side
// by side on this machine: the same redis-server, the same configuration
// (one domain, 10,000 keys, a limit nobody reaches), the same load generator
// (fleetlimit's loadgen, in this process) at each concurrency, the systems
// alternating run by run. It prints decisions per second, latency and the
// CPU time per decision of the service, of Redis and of the load generator
// (from /proc), each as min/median/max over the repetitions, and
// fleetlimit's ratios to upstream.
//
//	go run ./scripts/sidebyside -upstream $(scripts/upstream-ratelimit)
//
// It starts every process on loopback and stops them when it ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fleetlimit/fleetlimit/loadgen"
)

func main() {
	upstream := flag.String("upstream", "", "envoyproxy/ratelimit's service_cmd (scripts/upstream-ratelimit installs it)")
	fleet := flag.String("fleetlimit", "", "fleetlimit binary (default: built from this tree)")
	before := flag.String("before", "", "another fleetlimit binary, run as the systems named before/DESIGN (to compare builds)")
	systems := flag.String("systems", "bare,upstream,shared-counter,central-counter,central-log",
		"systems to run: bare (a gRPC server that answers OK at once: what the RPC itself costs), upstream, or a fleetlimit design, DESIGN+counters for its fixed windows in one counter (window_buckets 1) instead of the exact log")
	concs := flag.String("concurrency", "8,32,128", "load generator concurrencies")
	reps := flag.Int("reps", 3, "repetitions of each run")
	dur := flag.Duration("duration", 10*time.Second, "length of each run")
	keys := flag.Int("keys", 10000, "distinct keys")
	bare := flag.String("bare-serve", "", "(internal) serve the bare gRPC baseline on this address")
	flag.Parse()
	if *bare != "" {
		if err := serveBare(*bare); err != nil {
			fmt.Fprintln(os.Stderr, "sidebyside:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*upstream, *fleet, *before, strings.Split(*systems, ","), ints(*concs), *reps, *dur, *keys); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "sidebyside: concurrency %q: want whole numbers\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// sample is one run's figures.
type sample struct {
	perSec, p50, p99, svcCPU, redisCPU, genCPU float64 // decisions/s, µs
}

func run(upstream, fleet, before string, systems []string, concs []int, reps int, dur time.Duration, keys int) error {
	dir, err := os.MkdirTemp("", "sidebyside")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if fleet == "" {
		fleet = filepath.Join(dir, "fleetlimit")
		if out, err := exec.Command("go", "build", "-o", fleet, "./cmd/fleetlimit").CombinedOutput(); err != nil {
			return fmt.Errorf("building fleetlimit: %v\n%s", err, out)
		}
	}
	if slices.Contains(systems, "upstream") && upstream == "" {
		return fmt.Errorf("-upstream is required to run upstream (scripts/upstream-ratelimit installs it)")
	}
	root := filepath.Join(dir, "runtime")
	cfgDir := filepath.Join(root, "ratelimit", "config")
	os.MkdirAll(cfgDir, 0o755)
	cfg := "domain: edge\ndescriptors:\n  - key: api_key\n    rate_limit: {unit: minute, requests_per_unit: 1000000000}\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "limits.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	redis, redisAddr, err := startRedis(dir)
	if err != nil {
		return err
	}
	defer stop(redis)
	results := map[string]map[int][]sample{}
	fmt.Printf("%d keys, a limit nobody reaches, %v a run, %d repetitions, systems alternating\n", keys, dur, reps)
	for rep := 0; rep < reps; rep++ {
		for _, c := range concs {
			for _, sys := range systems {
				s, err := once(fleet, before, upstream, sys, root, redis.Process.Pid, redisAddr, c, dur, keys)
				if err != nil {
					return fmt.Errorf("%s at concurrency %d: %w", sys, c, err)
				}
				fmt.Printf("  rep %d  %-16s c=%-4d %8.0f decisions/s  p50 %6.0fµs  p99 %6.0fµs  CPU/decision: service %5.1fµs redis %5.1fµs loadgen %5.1fµs\n",
					rep+1, sys, c, s.perSec, s.p50, s.p99, s.svcCPU, s.redisCPU, s.genCPU)
				if results[sys] == nil {
					results[sys] = map[int][]sample{}
				}
				results[sys][c] = append(results[sys][c], s)
			}
		}
	}
	report(results, systems, concs)
	return nil
}

// once runs one system at one concurrency: a fresh process on an emptied
// Redis.
func once(fleet, before, upstream, sys, root string, redisPid int, redisAddr string, conc int, dur time.Duration, keys int) (sample, error) {
	if out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port(redisAddr), "flushall").CombinedOutput(); err != nil {
		return sample{}, fmt.Errorf("flushall: %v %s", err, out)
	}
	grpcAddr, httpAddr, debugAddr := free(), free(), free()
	env := append(os.Environ(), "USE_STATSD=false", "LOG_LEVEL=error", "RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit",
		"RUNTIME_WATCH_ROOT=false", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+port(grpcAddr), "HOST=127.0.0.1", "PORT="+port(httpAddr))
	var cmd *exec.Cmd
	switch sys {
	case "bare":
		self, err := os.Executable()
		if err != nil {
			return sample{}, err
		}
		cmd = exec.Command(self, "-bare-serve", grpcAddr)
	case "upstream":
		cmd = exec.Command(upstream)
		env = append(env, "DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+port(debugAddr))
	default:
		bin, design := fleet, sys
		if d, ok := strings.CutPrefix(sys, "before/"); ok {
			if before == "" {
				return sample{}, fmt.Errorf("system %s needs -before", sys)
			}
			bin, design = before, d
		}
		cmd = exec.Command(bin, "serve", "--drain-delay", "0s")
		if d, ok := strings.CutSuffix(design, "+counters"); ok {
			design = d
			env = append(env, "FLEETLIMIT_WINDOW_BUCKETS=1")
		}
		env = append(env, "FLEETLIMIT_DESIGN="+design)
	}
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	defer stop(cmd)
	if err := waitPort(grpcAddr); err != nil {
		return sample{}, err
	}
	rep, err := loadgen.Run(context.Background(), loadgen.Options{Target: grpcAddr, Domain: "edge", Key: "api_key", Keys: keys,
		Concurrency: conc, Conns: min(4, conc), Duration: dur, CPU: map[string]int{"service": cmd.Process.Pid, "redis": redisPid}})
	if err != nil {
		return sample{}, err
	}
	if rep.Over > 0 || rep.Errors > 0 {
		return sample{}, fmt.Errorf("%d over the limit and %d errors: the run does not measure what it should", rep.Over, rep.Errors)
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return sample{perSec: rep.PerSecond(), p50: us(rep.Quantile(0.5)), p99: us(rep.Quantile(0.99)),
		svcCPU: us(rep.CPUPerDecision("service")), redisCPU: us(rep.CPUPerDecision("redis")), genCPU: us(rep.CPUPerDecision("loadgen"))}, nil
}

// bareService answers every request OK at once, with a status of the
// size a real answer has: the cost of the RPC alone.
type bareService struct {
	pb.UnimplementedRateLimitServiceServer
}

func (bareService) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	return &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{{
		Code: pb.RateLimitResponse_OK, CurrentLimit: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: 1e9, Unit: pb.RateLimitResponse_RateLimit_MINUTE},
		LimitRemaining: 999_999_999, DurationUntilReset: durationpb.New(30 * time.Second)}}}, nil
}

// serveBare runs the bare baseline on addr until it is interrupted.
func serveBare(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	gs := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(gs, bareService{})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		gs.Stop()
	}()
	return gs.Serve(l)
}

// report prints min/median/max of each figure, and fleetlimit's medians
// against upstream's.
func report(results map[string]map[int][]sample, systems []string, concs []int) {
	fmt.Println()
	fmt.Println("| system | concurrency | decisions/s (min/median/max) | p50 µs | p99 µs | service CPU µs/decision | Redis CPU µs/decision | loadgen CPU µs/decision | ×upstream decisions/s | ×upstream service+Redis CPU |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range concs {
		for _, sys := range systems {
			ss := results[sys][c]
			pick := func(f func(sample) float64) []float64 { return sorted(ss, f) }
			med := func(v []float64) float64 { return v[len(v)/2] }
			mmm := func(v []float64, f string) string {
				return fmt.Sprintf(f+" / "+f+" / "+f, v[0], med(v), v[len(v)-1])
			}
			ps, p50, p99 := pick(func(s sample) float64 { return s.perSec }), pick(func(s sample) float64 { return s.p50 }), pick(func(s sample) float64 { return s.p99 })
			svc, rds, gen := pick(func(s sample) float64 { return s.svcCPU }), pick(func(s sample) float64 { return s.redisCPU }), pick(func(s sample) float64 { return s.genCPU })
			ratio, cpuRatio := "", ""
			if up := results["upstream"][c]; up != nil && sys != "upstream" {
				ups := sorted(up, func(s sample) float64 { return s.perSec })
				upc := sorted(up, func(s sample) float64 { return s.svcCPU + s.redisCPU })
				mine := med(pick(func(s sample) float64 { return s.svcCPU + s.redisCPU }))
				ratio, cpuRatio = fmt.Sprintf("%.2f", med(ps)/med(ups)), fmt.Sprintf("%.2f", mine/med(upc))
			}
			fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", sys, c, mmm(ps, "%.0f"), mmm(p50, "%.0f"), mmm(p99, "%.0f"),
				mmm(svc, "%.1f"), mmm(rds, "%.1f"), mmm(gen, "%.1f"), ratio, cpuRatio)
		}
	}
}

// sorted is f of every sample, ascending.
func sorted(ss []sample, f func(sample) float64) []float64 {
	var v []float64
	for _, s := range ss {
		v = append(v, f(s))
	}
	slices.Sort(v)
	return v
}

func startRedis(dir string) (*exec.Cmd, string, error) {
	addr := free()
	cmd := exec.Command("redis-server", "--port", port(addr), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("redis-server: %w", err)
	}
	if err := waitPort(addr); err != nil {
		stop(cmd)
		return nil, "", err
	}
	return cmd, addr, nil
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

func free() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

func waitPort(addr string) error {
	for i := 0; i < 400; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("%s did not open", addr)
}
