package rls

import (
	"fmt"
	"sync"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/window"
)

// Quotas are counted as envoyproxy/ratelimit counts them, whatever the
// design: a descriptor in quota mode (quota_mode, or QUOTA_MODE for all)
// is counted by central-counter, upstream's own algorithm and Redis layout,
// in fixed windows. Every hit counts, within the limit or past it, and a
// descriptor is over when its count, this request's hits included, is past
// the limit: so a check (hits_addend 0) with the limit reached is still
// within it, and the hits a request adds when its stream is done
// (apply_on_stream_done), after the request was served, are counted even
// past the limit. That is the flow upstream's quota mode exists for
// (examples/envoy/proxy.yaml, /tokenquota: a check of +0 before the
// request, +1 after it), and its integration tests
// (integration-test/scripts/token-quota.sh, multiservice-tokenquota.sh)
// hold upstream to it: L + 1 requests a window get through, the last check
// finding the count at L. A design that counts only what it admits cannot
// count a hit after the fact, so quota descriptors do not run on it; each
// of their decisions waits on the store, as upstream's do.
//
// quotaLimiter returns the limiter of quota descriptors: the Service's own
// when it runs central-counter, else one made on first use over the same
// store, with one gateway (central-counter's every decision is the store's;
// K matters only to the fallback, which gives it L/K), closed by Close.
func (s *Service) quotaLimiter() (*limiter.Limiter, error) {
	if s.lim.Config().Design == "central-counter" {
		return s.lim, nil
	}
	s.quota.once.Do(func() {
		c := s.lim.Config()
		c.Design, c.WindowKind, c.WindowBuckets = "central-counter", window.Fixed, 0
		c.Membership, c.Gateways, c.Gateway = false, max(s.lim.Fleet().Gateways, 1), 0
		s.quota.lim, s.quota.err = limiter.New(c)
		if s.quota.err != nil {
			s.quota.err = fmt.Errorf("the quota limiter (central-counter): %w", s.quota.err)
		}
	})
	return s.quota.lim, s.quota.err
}

// quotaState is the Service's quota limiter, made on first use.
type quotaState struct {
	once sync.Once
	lim  *limiter.Limiter
	err  error
}

// isQuota reports whether lim is counted as a quota under set.
func isQuota(set Settings, lim *RateLimit) bool { return set.QuotaMode || lim.QuotaMode }

// Close closes the quota limiter, if one was made; the Service's own
// limiter is its caller's to close.
func (s *Service) Close() error {
	s.quota.once.Do(func() {}) // none made after this
	if s.quota.lim != nil {
		return s.quota.lim.Close()
	}
	return nil
}
