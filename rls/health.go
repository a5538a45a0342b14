package rls

import (
	"context"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// Health reports whether the service should receive traffic, and why not:
// not while it drains for shutdown, nor while the store is unreachable (its
// decisions are then the fallback's, which a load balancer should know).
func (s *Service) Health() (serving bool, why string) {
	switch {
	case s.draining.Load():
		return false, "draining for shutdown"
	case s.lim.Stats().Degraded:
		return false, "the store is unreachable; the fallback decides"
	case s.cfg.Load() == nil:
		return false, "no configuration loaded"
	}
	return true, "OK"
}

// Drain marks the service as going away: health checks answer NOT_SERVING
// from now on, while requests are still answered.
func (s *Service) Drain() {
	s.draining.Store(true)
	s.updateHealth()
}

// Register registers on gs the rate limit service, grpc.health.v1 (for the
// whole server, "", and for the rate limit service by name) and server
// reflection, so that grpcurl and Kubernetes gRPC probes work.
func (s *Service) Register(gs *grpc.Server) {
	pb.RegisterRateLimitServiceServer(gs, s)
	healthpb.RegisterHealthServer(gs, s.health)
	reflection.Register(gs)
	s.updateHealth()
}

// WatchHealth keeps the gRPC health status in step with Health, checking
// every interval until ctx ends.
func (s *Service) WatchHealth(ctx context.Context, interval time.Duration) {
	every(ctx, interval, s.updateHealth)
}

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

func (s *Service) updateHealth() {
	st := healthpb.HealthCheckResponse_SERVING
	if ok, _ := s.Health(); !ok {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(pb.RateLimitService_ServiceDesc.ServiceName, st)
}

// newHealth is the health server of a new Service.
func newHealth() *health.Server { return health.NewServer() }
