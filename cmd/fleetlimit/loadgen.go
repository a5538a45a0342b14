package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func newLoadgenCmd() *cobra.Command {
	var (
		target, domain, key string
		conc, conns, keys   int
		duration            time.Duration
	)
	c := &cobra.Command{
		Use:   "loadgen",
		Short: "Drive a rate limit service with concurrent gRPC clients and report throughput and latency",
		Long: `loadgen sends ShouldRateLimit requests to --target (fleetlimit serve, or any
envoy.service.ratelimit.v3 server such as envoyproxy/ratelimit) from --concurrency
goroutines over --conns connections for --duration, one descriptor
{KEY: value} per request with values drawn from --keys distinct values, and
prints decisions per second and latency percentiles. Point it at loopback
addresses only.`,
		Example: `  fleetlimit loadgen --target 127.0.0.1:8081 --domain edge --key api_key --concurrency 32 --duration 10s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case conc < 1 || conc > 10000:
				return usagef("concurrency %d: want 1 to 10000", conc)
			case conns < 1 || conns > conc:
				return usagef("conns %d: want 1 to the concurrency", conns)
			case duration <= 0 || duration > time.Hour:
				return usagef("duration %v: want more than 0 and at most 1h", duration)
			case keys < 1:
				return usagef("keys %d: want at least 1", keys)
			}
			var clients []pb.RateLimitServiceClient
			for i := 0; i < conns; i++ {
				cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return runError{err}
				}
				defer cc.Close()
				clients = append(clients, pb.NewRateLimitServiceClient(cc))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), duration)
			defer cancel()
			var mu sync.Mutex
			var lat []time.Duration
			var over, errs int
			var wg sync.WaitGroup
			start := time.Now()
			for g := 0; g < conc; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cl := clients[g%conns]
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					var mine []time.Duration
					myOver, myErrs := 0, 0
					for ctx.Err() == nil {
						req := &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlv3.RateLimitDescriptor{
							{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: key, Value: fmt.Sprint("v", rng.IntN(keys))}}}}}
						t0 := time.Now()
						rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
						r, err := cl.ShouldRateLimit(rctx, req)
						rcancel()
						if err != nil {
							if ctx.Err() == nil {
								myErrs++
							}
							continue
						}
						mine = append(mine, time.Since(t0))
						if r.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
							myOver++
						}
					}
					mu.Lock()
					lat = append(lat, mine...)
					over += myOver
					errs += myErrs
					mu.Unlock()
				}()
			}
			wg.Wait()
			wall := time.Since(start)
			if len(lat) == 0 {
				return runError{fmt.Errorf("no request succeeded against %s (%d errors)", target, errs)}
			}
			slices.Sort(lat)
			q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
			fmt.Fprintf(cmd.OutOrStdout(), "%d decisions in %v: %.0f decisions/s, %d over the limit, %d errors\n",
				len(lat), wall.Round(time.Millisecond), float64(len(lat))/wall.Seconds(), over, errs)
			fmt.Fprintf(cmd.OutOrStdout(), "latency p50 %v  p90 %v  p99 %v  p99.9 %v  max %v\n",
				q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond), q(0.99).Round(time.Microsecond),
				q(0.999).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&target, "target", "127.0.0.1:8081", "gRPC address of the rate limit service")
	f.StringVar(&domain, "domain", "edge", "domain of the requests")
	f.StringVar(&key, "key", "api_key", "descriptor key of the requests")
	f.IntVar(&keys, "keys", 1000, "distinct descriptor values")
	f.IntVar(&conc, "concurrency", 32, "concurrent clients")
	f.IntVar(&conns, "conns", 4, "gRPC connections")
	f.DurationVar(&duration, "duration", 10*time.Second, "how long to run")
	return c
}
