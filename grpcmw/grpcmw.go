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
	"errors"
	"fmt"
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

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
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
	// and ratelimit names the one that binds. Their names must differ.
	Limits []policy.Policy
	// NoHeaders sends no rate limit metadata (RetryInfo is still sent on
	// a rejection).
	NoHeaders bool
}

// interceptor is a checked Options with what every call needs made once.
type interceptor struct {
	Options
	l   *limiter.Limiter
	set *policy.Set // nil under the Limiter's default limit
}

// newInterceptor checks opt and fills its defaults.
func newInterceptor(l *limiter.Limiter, opt Options) (*interceptor, error) {
	if l == nil {
		return nil, fmt.Errorf("grpcmw: no Limiter")
	}
	ic := &interceptor{Options: opt, l: l}
	if len(opt.Limits) > 0 {
		set, err := policy.NewSet(opt.Limits)
		if err != nil {
			return nil, fmt.Errorf("grpcmw: %w", err)
		}
		ic.set = set
	}
	if ic.Key == nil {
		ic.Key = Peer()
	}
	if ic.Policy == "" {
		ic.Policy = "default"
	}
	return ic, nil
}

// UnaryServerInterceptor limits unary calls with l, or says what is wrong
// with opt (limits of one name, an invalid limit).
func UnaryServerInterceptor(l *limiter.Limiter, opt Options) (grpc.UnaryServerInterceptor, error) {
	ic, err := newInterceptor(l, opt)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := ic.decide(ctx, info.FullMethod, func(md metadata.MD) error { return grpc.SetHeader(ctx, md) }); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}, nil
}

// StreamServerInterceptor limits streams with l: one decision when a
// stream opens, whatever it then carries. It says what is wrong with opt
// as UnaryServerInterceptor does.
func StreamServerInterceptor(l *limiter.Limiter, opt Options) (grpc.StreamServerInterceptor, error) {
	ic, err := newInterceptor(l, opt)
	if err != nil {
		return nil, err
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := ic.decide(ss.Context(), info.FullMethod, ss.SetHeader); err != nil {
			return err
		}
		return handler(srv, ss)
	}, nil
}

// decide decides one call and sets its metadata with setHeader: nil when
// it may go on, else the status error to answer.
func (ic *interceptor) decide(ctx context.Context, method string, setHeader func(metadata.MD) error) error {
	if ic.Skip != nil && ic.Skip(method) {
		return nil
	}
	n := 1
	if ic.Cost != nil {
		n = ic.Cost(ctx, method)
	}
	d, err := ic.allow(ctx, method, n)
	if errors.Is(err, limiter.ErrClosed) { // the server is shutting down
		return status.Error(codes.Unavailable, "grpcmw: "+err.Error())
	}
	if err != nil { // a Cost below 1: the caller's bug, never a silent admit
		return status.Error(codes.Internal, "grpcmw: "+err.Error())
	}
	if !ic.NoHeaders {
		// the call's headers are not sent yet, so this fails only on a
		// stream already closed, where nothing can be said anyway
		_ = setHeader(ic.metadata(d))
	}
	if d.Allowed {
		return nil
	}
	return Rejection(d)
}

// allow decides a call of cost n under the default limit or the Set's.
func (ic *interceptor) allow(ctx context.Context, method string, n int) (limiter.Decision, error) {
	if ic.set == nil {
		return ic.l.AllowN(ctx, ic.Key(ctx, method), n)
	}
	return ic.l.AllowLimits(ctx, ic.Key(ctx, method), ic.set.Limits(), n)
}

// metadata is the draft's two fields of a decision, as response metadata.
func (ic *interceptor) metadata(d limiter.Decision) metadata.MD {
	v := make([]string, 2) // one allocation for both fields' values
	if ic.set != nil {
		v[0], v[1] = ic.set.Fields(d)
	} else {
		v[0], v[1] = policy.Fields(ic.Policy, d)
	}
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

// ServerOptions are both interceptors as options for grpc.NewServer, or
// what is wrong with opt.
func ServerOptions(l *limiter.Limiter, opt Options) ([]grpc.ServerOption, error) {
	u, err := UnaryServerInterceptor(l, opt)
	if err != nil {
		return nil, err
	}
	s, err := StreamServerInterceptor(l, opt)
	if err != nil {
		return nil, err
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s)}, nil
}
