package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/loadgen"
)

func newLoadgenCmd() *cobra.Command {
	var o loadgen.Options
	var cpu []string
	c := &cobra.Command{
		Use:   "loadgen",
		Short: "Drive a rate limit service with concurrent gRPC clients and report throughput and latency",
		Long: `loadgen sends ShouldRateLimit requests to --target (fleetlimit serve, or any
envoy.service.ratelimit.v3 server such as envoyproxy/ratelimit) from --concurrency
goroutines over --conns connections for --duration, one descriptor
{KEY: value} per request with values drawn from --keys distinct values, and
prints decisions per second and latency percentiles. With --cpu NAME=PID
(repeatable) it also prints the CPU time per decision of each named process
(the service, its Redis) and of loadgen itself, from /proc: on a machine
whose cores the load generator shares, CPU per decision is the figure that
compares services, not decisions per second. Point it at loopback addresses
only.`,
		Example: `  fleetlimit loadgen --target 127.0.0.1:8081 --domain edge --key api_key --concurrency 32 --duration 10s
  fleetlimit loadgen --cpu serve=$(pgrep -f 'fleetlimit serve') --cpu redis=$(pgrep redis-server)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			var err error
			if o.CPU, err = parseCPU(cpu); err != nil {
				return usageError{err}
			}
			rep, err := loadgen.Run(cmd.Context(), o)
			if err != nil {
				return runError{err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%d decisions in %v: %.0f decisions/s, %d over the limit, %d errors\n",
				rep.Decisions, rep.Wall.Round(time.Millisecond), rep.PerSecond(), rep.Over, rep.Errors)
			us := func(q float64) time.Duration { return rep.Quantile(q).Round(time.Microsecond) }
			fmt.Fprintf(w, "latency p50 %v  p90 %v  p99 %v  p99.9 %v  max %v\n", us(0.5), us(0.9), us(0.99), us(0.999), us(1))
			fmt.Fprint(w, "CPU per decision:")
			for _, n := range slices.Sorted(maps.Keys(rep.CPU)) {
				fmt.Fprintf(w, " %s %.1fµs", n, float64(rep.CPUPerDecision(n))/1e3)
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Target, "target", "127.0.0.1:8081", "gRPC address of the rate limit service")
	f.StringVar(&o.Domain, "domain", "edge", "domain of the requests")
	f.StringVar(&o.Key, "key", "api_key", "descriptor key of the requests")
	f.IntVar(&o.Keys, "keys", 1000, "distinct descriptor values")
	f.IntVar(&o.Concurrency, "concurrency", 32, "concurrent clients")
	f.IntVar(&o.Conns, "conns", 4, "gRPC connections")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to run")
	f.StringArrayVar(&cpu, "cpu", nil, "NAME=PID: also report this process's CPU time per decision (repeatable)")
	return c
}

// parseCPU reads --cpu NAME=PID flags.
func parseCPU(flags []string) (map[string]int, error) {
	out := map[string]int{}
	for _, f := range flags {
		name, pid, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("--cpu %q: want NAME=PID", f)
		}
		if _, dup := out[name]; dup || name == "loadgen" {
			return nil, fmt.Errorf("--cpu %q: the name %q is taken", f, name)
		}
		out[name] = n
	}
	return out, nil
}
