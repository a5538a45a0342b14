// Package grpcmw is gRPC server middleware that rate-limits calls with a
// fleetlimit Limiter: unary and stream interceptors that decide each call
// by its key before the handler runs, answer RESOURCE_EXHAUSTED with a
// google.rpc.RetryInfo detail when it is over the limit, and send the IETF
// draft's RateLimit-Policy and RateLimit fields as response metadata.
//
// A stream is one decision, made when it opens; its messages are not
// counted. It decides from the call's metadata, peer and method alone and
// never reads a message.
package grpcmw

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
)

// KeyFunc names the rate-limited key of a call from its context (which
// holds its incoming metadata and peer) and its full method name,
// "/package.Service/Method".
type KeyFunc func(ctx context.Context, fullMethod string) string

// Metadata keys calls by the first value of a metadata field, such as an
// API key (gRPC metadata names are lower case; the name is folded); all
// calls without it share the key "".
func Metadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) string {
		if v := metadata.ValueFromIncomingContext(ctx, name); len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// Peer keys calls by the IP address of the connection's remote end (the
// whole address when it has no port, as a Unix socket's). It does not
// trust forwarded metadata: behind a proxy, key by a field the proxy sets.
func Peer() KeyFunc {
	return func(ctx context.Context, _ string) string {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return ""
		}
		a := p.Addr.String()
		if host, _, err := net.SplitHostPort(a); err == nil {
			return host
		}
		return a
	}
}

// Method keys calls by their full method name, so that each method has one
// limit for all its callers.
func Method() KeyFunc {
	return func(_ context.Context, m string) string { return m }
}

// Join keys calls by several keys at once (for example a caller's and the
// method's, for a limit per caller per method), separated by "|".
func Join(keys ...KeyFunc) KeyFunc {
	return func(ctx context.Context, m string) string {
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(k(ctx, m))
		}
		return b.String()
	}
}

// Options configure the interceptors.
type Options struct {
	// Key names a call's key; default Peer().
	Key KeyFunc
	// Cost is a call's cost, at least 1; default 1. A cost below 1 fails
	// the call with INTERNAL, and it never reaches the handler.
	Cost func(ctx context.Context, fullMethod string) int
	// Skip, when it reports true, lets a call through uncounted (health
	// checks, reflection); default none.
	Skip func(fullMethod string) bool
	// Policy names the limit in the draft's fields; default "default".
	Policy string
	// Limits, when set, decide every call under several limits at once
	// (limiter.AllowLimits) instead of the Limiter's default: a call goes
	// on only if every one admits it. ratelimit-policy then lists them all,
	// and ratelimit names the one that binds. Their names must differ, or
	// every call fails with INTERNAL.
	Limits []httpmw.Policy
	// NoHeaders sends no rate limit metadata (RetryInfo is still sent on
	// a rejection).
	NoHeaders bool
}

// UnaryServerInterceptor limits unary calls with l.
func UnaryServerInterceptor(l *limiter.Limiter, opt Options) grpc.UnaryServerInterceptor {
	opt = opt.withDefaults()
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := opt.decide(ctx, l, info.FullMethod, func(md metadata.MD) error { return grpc.SetHeader(ctx, md) }); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor limits streams with l: one decision when a
// stream opens, whatever it then carries.
func StreamServerInterceptor(l *limiter.Limiter, opt Options) grpc.StreamServerInterceptor {
	opt = opt.withDefaults()
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := opt.decide(ss.Context(), l, info.FullMethod, ss.SetHeader); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// withDefaults fills what opt leaves out.
func (opt Options) withDefaults() Options {
	if opt.Key == nil {
		opt.Key = Peer()
	}
	if opt.Policy == "" {
		opt.Policy = "default"
	}
	return opt
}

// decide decides one call and sets its metadata with setHeader: nil when
// it may go on, else the status error to answer.
func (opt Options) decide(ctx context.Context, l *limiter.Limiter, method string, setHeader func(metadata.MD) error) error {
	if opt.Skip != nil && opt.Skip(method) {
		return nil
	}
	n := 1
	if opt.Cost != nil {
		n = opt.Cost(ctx, method)
	}
	d, err := opt.allow(ctx, l, method, n)
	if err != nil { // a Cost below 1, two limits of one name: the caller's bug, never a silent admit
		return status.Error(codes.Internal, err.Error())
	}
	if !opt.NoHeaders {
		// the call's headers are not sent yet, so this fails only on a
		// stream already closed, where nothing can be said anyway
		_ = setHeader(opt.metadata(d))
	}
	if d.Allowed {
		return nil
	}
	return Rejection(d)
}

// allow decides a call of cost n under the default limit or opt.Limits.
func (opt Options) allow(ctx context.Context, l *limiter.Limiter, method string, n int) (limiter.Decision, error) {
	if len(opt.Limits) == 0 {
		return l.AllowN(ctx, opt.Key(ctx, method), n)
	}
	if err := httpmw.CheckPolicies(opt.Limits); err != nil {
		return limiter.Decision{}, fmt.Errorf("grpcmw: %w", err)
	}
	return l.AllowLimits(ctx, opt.Key(ctx, method), httpmw.Limits(opt.Limits), n)
}

// metadata is the draft's two fields of a decision, as response metadata.
func (opt Options) metadata(d limiter.Decision) metadata.MD {
	reset := int64(math.Ceil(d.Reset.Seconds()))
	v, name := make([]string, 2), opt.Policy // one allocation for both fields' values
	if len(opt.Limits) > 0 {
		v[0], name = httpmw.Policies(opt.Limits), opt.Limits[d.Bound].Name
	} else {
		v[0] = httpmw.PolicyField(name, uint64(d.Limit), int64(math.Ceil(d.Window.Seconds())))
	}
	v[1] = httpmw.LimitField(name, uint64(max(d.Remaining, 0)), reset)
	return metadata.MD{"ratelimit-policy": v[:1:1], "ratelimit": v[1:]}
}

// Rejection is the status error of a rejected decision: RESOURCE_EXHAUSTED
// with a google.rpc.RetryInfo detail that says how long to wait.
func Rejection(d limiter.Decision) error {
	st := status.New(codes.ResourceExhausted, "rate limit exceeded")
	if ds, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d.RetryAfter)}); err == nil {
		st = ds
	}
	return st.Err()
}

// RetryDelay reads the RetryInfo of an error returned to a client: the
// delay, and whether the error carried one.
func RetryDelay(err error) (time.Duration, bool) {
	for _, x := range status.Convert(err).Details() {
		if ri, is := x.(*errdetails.RetryInfo); is && ri.RetryDelay != nil {
			return ri.RetryDelay.AsDuration(), true
		}
	}
	return 0, false
}
