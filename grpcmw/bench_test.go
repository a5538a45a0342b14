package grpcmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fleetlimit/fleetlimit/grpcmw"
	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
)

// BenchmarkMiddleware is the cost of one decision through each middleware
// on the embedded store, keyed by a header or metadata field, with the
// draft's headers: the interceptor called as gRPC calls it, beside httpmw
// serving a recorded request. Neither touches a network.
func BenchmarkMiddleware(b *testing.B) {
	l, err := limiter.New(limiter.Config{Design: "split", Limit: 1 << 30, Window: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.Run("grpcmw-unary", func(b *testing.B) {
		in, err := grpcmw.UnaryServerInterceptor(l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key")})
		if err != nil {
			b.Fatal(err)
		}
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", "alice"))
		ctx = peer.NewContext(ctx, &peer.Peer{})
		info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/EmptyCall"}
		h := func(context.Context, any) (any, error) { return nil, nil }
		// grpc.SetHeader needs the server's stream in the context; the
		// benchmark gives it one that keeps the metadata
		ctx = grpc.NewContextWithServerTransportStream(ctx, &headerSink{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := in(ctx, nil, info, h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("httpmw", func(b *testing.B) {
		limit, err := httpmw.New(l, httpmw.Options{Key: httpmw.Header("X-API-Key")})
		if err != nil {
			b.Fatal(err)
		}
		h := limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "alice")
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkLoopbackCall is a whole unary call over loopback, without the
// interceptor, with it, and with it but no rate limit metadata, to show
// its share of a call.
func BenchmarkLoopbackCall(b *testing.B) {
	l, err := limiter.New(limiter.Config{Design: "split", Limit: 1 << 30, Window: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{"bare", "grpcmw", "grpcmw-noheaders"} {
		b.Run(name, func(b *testing.B) {
			var c testpb.TestServiceClient
			switch name {
			case "bare":
				c = serveWith(b)
			case "grpcmw":
				c = serve(b, l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key")})
			default:
				c = serve(b, l, grpcmw.Options{Key: grpcmw.Metadata("x-api-key"), NoHeaders: true})
			}
			ctx := withKey("alice")
			for b.Loop() {
				if _, err := c.EmptyCall(ctx, &testpb.Empty{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// headerSink is a server transport stream that keeps what is set.
type headerSink struct{ md metadata.MD }

func (h *headerSink) Method() string                  { return "" }
func (h *headerSink) SetHeader(md metadata.MD) error  { h.md = md; return nil }
func (h *headerSink) SendHeader(md metadata.MD) error { h.md = md; return nil }
func (h *headerSink) SetTrailer(metadata.MD) error    { return nil }

// discardWriter is a response writer that keeps nothing but its headers.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
