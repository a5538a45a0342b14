package grpcmw_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fleetlimit/fleetlimit/grpcmw"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// Limit each API key to 2 calls a minute: the third is RESOURCE_EXHAUSTED,
// and the client reads how long to wait from its RetryInfo.
func Example() {
	l, _ := limiter.New(limiter.Config{Limit: 2, Window: time.Minute})
	defer l.Close()
	opt := grpcmw.Options{Key: grpcmw.Metadata("x-api-key")}
	limits, err := grpcmw.ServerOptions(l, opt)
	if err != nil {
		panic(err) // a bad option is refused here, never at a call
	}
	s := grpc.NewServer(limits...)
	testpb.RegisterTestServiceServer(s, service{})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(lis)
	defer s.Stop()

	cc, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	c := testpb.NewTestServiceClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "alice")
	for range 3 {
		var hd metadata.MD
		_, err := c.EmptyCall(ctx, &testpb.Empty{}, grpc.Header(&hd))
		delay, _ := grpcmw.RetryDelay(err)
		fmt.Println(status.Code(err), hd.Get("ratelimit"), delay.Round(time.Minute))
	}
	// Output:
	// OK ["default";r=1;t=60] 0s
	// OK ["default";r=0;t=60] 0s
	// ResourceExhausted ["default";r=0;t=60] 1m0s
}

// The interceptors of a fleet of gRPC servers sharing Redis: three
// servers, this one the first.
func Example_fleet() {
	st, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{"127.0.0.1:6379"}})
	if err != nil {
		panic(err)
	}
	l, err := limiter.New(limiter.Config{Limit: 100, Window: time.Minute, Gateways: 3, Gateway: 0, Store: st})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	limits, err := grpcmw.ServerOptions(l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key")})
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer(limits...)
	defer s.Stop()
}
