// Command grpcserver is a small gRPC service (grpc-go's test service)
// behind fleetlimit's interceptors: each x-api-key value may make -limit
// calls per -window. Run several with -redis and distinct -gateway indexes
// to share the limit as a fleet. With -call N it is a client instead: it
// makes N calls as one key and prints each answer.
//
//	go run ./examples/grpcserver -addr 127.0.0.1:8091 &
//	go run ./examples/grpcserver -addr 127.0.0.1:8091 -call 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fleetlimit/fleetlimit/grpcmw"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "listen address (or, with -call, the server's)")
	designName := flag.String("design", limiter.DefaultDesign, "coordination design")
	limit := flag.Int("limit", 3, "calls per window per x-api-key")
	window := flag.Duration("window", time.Minute, "window")
	sync := flag.Duration("sync", time.Second, "sync interval")
	redisAddr := flag.String("redis", "", "Redis address (empty: the embedded store)")
	gateways := flag.Int("gateways", 1, "gateways in the fleet")
	gateway := flag.Int("gateway", 0, "this gateway's index")
	calls := flag.Int("call", 0, "be a client: make this many calls and print their answers")
	key := flag.String("key", "alice", "with -call, the x-api-key to send")
	flag.Parse()
	if *calls > 0 {
		if err := client(*addr, *key, *calls); err != nil {
			log.Fatal(err)
		}
		return
	}
	var st store.Backend
	if *redisAddr != "" {
		rs, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{*redisAddr}})
		if err != nil {
			log.Fatal(err)
		}
		defer rs.Close()
		st = rs
	}
	l, err := limiter.New(limiter.Config{Design: *designName, Limit: *limit, Window: *window, Sync: *sync,
		Gateways: *gateways, Gateway: *gateway, Store: st})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := server(*addr, l); err != nil {
		log.Fatal(err)
	}
	if err := l.Close(); err != nil {
		log.Printf("final sync: %v", err)
	}
}

// service is grpc-go's test service with its empty call answered.
type service struct {
	testpb.UnimplementedTestServiceServer
}

func (service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// server serves until interrupted, every call limited by l per x-api-key.
func server(addr string, l *limiter.Limiter) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	opt := grpcmw.Options{Key: grpcmw.Metadata("x-api-key")}
	limits, err := grpcmw.ServerOptions(l, opt)
	if err != nil {
		return err
	}
	s := grpc.NewServer(limits...)
	testpb.RegisterTestServiceServer(s, service{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); s.GracefulStop() }()
	log.Printf("listening on %s (%d calls per %v per x-api-key)", addr, l.Config().Limit, l.Config().Window)
	return s.Serve(lis)
}

// client makes n calls as key and prints each answer.
func client(addr, key string, n int) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	c := testpb.NewTestServiceClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", key)
	for i := range n {
		var hd metadata.MD
		_, err := c.EmptyCall(ctx, &testpb.Empty{}, grpc.Header(&hd))
		delay, _ := grpcmw.RetryDelay(err)
		fmt.Printf("call %d: %v ratelimit=%q retry-after=%v\n", i+1, status.Code(err), hd.Get("ratelimit"), delay)
	}
	return nil
}
