// Package fleetlimitcaddy is a Caddy HTTP handler, http.handlers.fleetlimit,
// that rate-limits requests with fleetlimit: zones of per-key limits, each
// enforced by a fleetlimit design (headroom, shared-counter, central-log,
// ...) on the embedded store for one Caddy, or on Redis for a fleet of them.
// A request over a zone's limit is answered 429 with Retry-After and the
// IETF draft's RateLimit-Policy and RateLimit headers; the placeholder
// {http.fleetlimit.exceeded.zone} names the zone.
//
// A zone's limiter outlives a configuration reload that leaves the zone's
// settings as they were, so that no count is lost; it is closed (its admits
// flushed to the store) when the last configuration that uses it is
// unloaded. It never reads a request's body.
package fleetlimitcaddy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/policy"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler limits requests per key in one or more zones.
type Handler struct {
	// Zones are the limits, by name; every zone whose matchers match a
	// request decides it, in the order of their names, and the first
	// that rejects it answers.
	Zones map[string]*Zone `json:"zones,omitempty"`
	// Redis is the store a fleet shares; without it each Caddy counts
	// alone, on the embedded store.
	Redis *Redis `json:"redis,omitempty"`
	// Gateways is the number of Caddy instances sharing the limits (K);
	// default 1. Ignored with Membership.
	Gateways int `json:"gateways,omitempty"`
	// Gateway is this instance's index in [0, Gateways).
	Gateway int `json:"gateway,omitempty"`
	// Membership learns K and this instance's index from Redis, following
	// the instances that join, stop or crash.
	Membership bool `json:"membership,omitempty"`
	// Fleet names the fleet in Redis, for membership; default "caddy".
	Fleet string `json:"fleet,omitempty"`
	// Timeout bounds a request's wait on the store; default 50ms.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Headers is "draft" (default: RateLimit-Policy and RateLimit, one
	// item per zone), "legacy" (RateLimit-Limit, -Remaining and -Reset of
	// the zone with the least left) or "none" (only Retry-After).
	Headers string `json:"headers,omitempty"`

	zones    []*zoneState
	released bool // Cleanup has let go of the zones' limiters
}

// Zone is one limit: each value of Key may make Limit requests per Window.
type Zone struct {
	// Key names a request's key, with placeholders, for example
	// "{http.request.header.X-API-Key}" or "{remote_host}".
	Key string `json:"key"`
	// Limit is L, the requests per window per key.
	Limit int `json:"limit"`
	// Window is W.
	Window caddy.Duration `json:"window"`
	// Design is the coordination design; default limiter.DefaultDesign (permit).
	Design string `json:"design,omitempty"`
	// Sync is Δ, the sync interval; default 1s.
	Sync caddy.Duration `json:"sync,omitempty"`
	// MatcherSetsRaw limit the zone to the requests they match; default
	// every request.
	MatcherSetsRaw caddyhttp.RawMatcherSets `json:"match,omitempty" caddy:"namespace=http.matchers"`
}

// zoneState is a provisioned zone.
type zoneState struct {
	name     string
	key      string
	matchers caddyhttp.MatcherSets
	lim      *limiter.Limiter
	poolKey  string
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.fleetlimit",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Validate names the first bad setting.
func (h *Handler) Validate() error {
	if len(h.Zones) == 0 {
		return errors.New("fleetlimit: no zone: name at least one")
	}
	for name, z := range h.Zones {
		if err := z.validate(); err != nil {
			return fmt.Errorf("fleetlimit: zone %s: %w", name, err)
		}
	}
	switch h.Headers {
	case "", "draft", "legacy", "none":
	default:
		return fmt.Errorf("fleetlimit: headers %q: want draft, legacy or none", h.Headers)
	}
	if h.Membership && h.Redis == nil {
		return errors.New("fleetlimit: membership needs redis: the embedded store is one process's")
	}
	if h.Gateways < 0 || h.Gateway < 0 || (h.Gateways > 0 && h.Gateway >= h.Gateways) || (h.Gateways == 0 && h.Gateway > 0) {
		return fmt.Errorf("fleetlimit: gateway %d of gateways %d: want 0 ≤ gateway < gateways", h.Gateway, max(h.Gateways, 1))
	}
	if h.Timeout < 0 {
		return fmt.Errorf("fleetlimit: timeout %v: want a positive duration", time.Duration(h.Timeout))
	}
	if h.Redis != nil {
		return h.Redis.validate()
	}
	return nil
}

// validate names what is wrong with a zone.
func (z *Zone) validate() error {
	switch {
	case z.Key == "":
		return errors.New("key is empty: name the request's key, e.g. {remote_host}")
	case z.Limit < 1:
		return fmt.Errorf("limit %d: want at least 1", z.Limit)
	case z.Window <= 0:
		return fmt.Errorf("window %v: want a positive duration", time.Duration(z.Window))
	case z.Sync < 0:
		return fmt.Errorf("sync %v: want a positive duration", time.Duration(z.Sync))
	}
	if z.Design != "" {
		if !slices.Contains(limiter.Designs(), z.Design) {
			return fmt.Errorf("design: unknown design %q: want one of %s", z.Design, strings.Join(limiter.Designs(), ", "))
		}
	}
	return nil
}

// Provision makes or finds each zone's limiter.
func (h *Handler) Provision(ctx caddy.Context) error {
	if err := h.Validate(); err != nil {
		return err
	}
	names := make([]string, 0, len(h.Zones))
	for name := range h.Zones {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		zs, err := h.provisionZone(ctx, name, h.Zones[name])
		if err != nil {
			h.Cleanup()
			return fmt.Errorf("fleetlimit: zone %s: %w", name, err)
		}
		h.zones = append(h.zones, zs)
	}
	return nil
}

// provisionZone loads a zone's matchers and takes its limiter from the
// pool, made anew only when no loaded configuration has the same zone.
func (h *Handler) provisionZone(ctx caddy.Context, name string, z *Zone) (*zoneState, error) {
	zs := &zoneState{name: name, key: z.Key}
	if z.MatcherSetsRaw != nil {
		m, err := ctx.LoadModule(z, "MatcherSetsRaw")
		if err != nil {
			return nil, fmt.Errorf("match: %w", err)
		}
		if err := zs.matchers.FromInterface(m); err != nil {
			return nil, fmt.Errorf("match: %w", err)
		}
	}
	// the pool's key is everything the limiter is made of: the same zone
	// in the next configuration keeps it, and its counts
	key, err := json.Marshal(struct {
		Name              string
		Zone              Zone
		Redis             *Redis
		Gateways, Gateway int
		Membership        bool
		Fleet             string
		Timeout           caddy.Duration
	}{name, Zone{Key: "", Limit: z.Limit, Window: z.Window, Design: z.Design, Sync: z.Sync}, h.Redis, h.Gateways, h.Gateway, h.Membership, h.Fleet, h.Timeout})
	if err != nil {
		return nil, err
	}
	zs.poolKey = string(key)
	v, _, err := limiters.LoadOrNew(zs.poolKey, func() (caddy.Destructor, error) { return h.newLimiter(ctx, name, z) })
	if err != nil {
		return nil, err
	}
	zs.lim = v.(*pooled).Limiter
	return zs, nil
}

// Cleanup lets go of the zones' limiters; the last configuration to let go
// of one closes it, which flushes its admits to the store. The zones stay:
// a reload cleans the old configuration up while its last requests still
// run, and they must still be decided, by a limiter the new configuration
// shares or, once it is closed, as refused (ErrClosed): a handler without
// its zones would let them through uncounted.
func (h *Handler) Cleanup() error {
	if h.released {
		return nil
	}
	h.released = true
	var errs []error
	for _, zs := range h.zones {
		if _, err := limiters.Delete(zs.poolKey); err != nil {
			errs = append(errs, fmt.Errorf("fleetlimit: zone %s: %w", zs.name, err))
		}
	}
	return errors.Join(errs...)
}

// ServeHTTP decides r in every zone that matches it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	var legacy *limiter.Decision
	for _, zs := range h.zones {
		if len(zs.matchers) > 0 && !zs.matchers.AnyMatch(r) {
			continue
		}
		key := zs.key
		if repl != nil {
			key = repl.ReplaceAll(zs.key, "")
		}
		d, err := zs.lim.Allow(r.Context(), key)
		if errors.Is(err, limiter.ErrClosed) {
			// a reload closed this configuration's limiter while the
			// request was on its way through the old handler: nothing
			// was counted, and the client may try again at once
			w.Header().Set("Retry-After", "1")
			return caddyhttp.Error(http.StatusServiceUnavailable, fmt.Errorf("fleetlimit: zone %s: %w (reloading)", zs.name, err))
		}
		if err != nil {
			return caddyhttp.Error(http.StatusInternalServerError, err)
		}
		switch h.Headers {
		case "", "draft":
			setDraft(w.Header(), zs.name, d)
		case "legacy":
			if legacy == nil || d.Remaining < legacy.Remaining || !d.Allowed {
				legacy = &d
			}
		}
		if !d.Allowed {
			if legacy != nil {
				setLegacy(w.Header(), *legacy)
			}
			w.Header().Set("Retry-After", fmt.Sprint(int64(max(1, (d.RetryAfter+time.Second-1)/time.Second))))
			if repl != nil {
				repl.Set("http.fleetlimit.exceeded.zone", zs.name)
			}
			return caddyhttp.Error(http.StatusTooManyRequests, fmt.Errorf("fleetlimit: zone %s: rate limit exceeded", zs.name))
		}
	}
	if legacy != nil {
		setLegacy(w.Header(), *legacy)
	}
	return next.ServeHTTP(w, r)
}

// setDraft adds a zone's items to the draft's two fields.
func setDraft(h http.Header, zone string, d limiter.Decision) {
	h.Add("RateLimit-Policy", policy.PolicyField(zone, uint64(d.Limit), int64((d.Window+time.Second-1)/time.Second)))
	h.Add("RateLimit", policy.LimitField(zone, uint64(max(d.Remaining, 0)), int64((d.Reset+time.Second-1)/time.Second)))
}

// setLegacy sets the legacy trio of one decision.
func setLegacy(h http.Header, d limiter.Decision) {
	h.Set("RateLimit-Limit", fmt.Sprint(d.Limit))
	h.Set("RateLimit-Remaining", fmt.Sprint(max(d.Remaining, 0)))
	h.Set("RateLimit-Reset", fmt.Sprint(int64((d.Reset+time.Second-1)/time.Second)))
}

// limiters holds the zones' limiters across configuration reloads.
var limiters = caddy.NewUsagePool()

// pooled is a limiter in the pool, with what it must close.
type pooled struct {
	*limiter.Limiter
	closeStore func() error
}

// Destruct closes the limiter (a final sync) and then its store.
func (p *pooled) Destruct() error {
	err := p.Limiter.Close()
	if p.closeStore != nil {
		err = errors.Join(err, p.closeStore())
	}
	return err
}

// newLimiter makes a zone's limiter, on its own Redis connection when the
// fleet shares Redis.
func (h *Handler) newLimiter(ctx caddy.Context, name string, z *Zone) (*pooled, error) {
	cfg := limiter.Config{Design: z.Design, Limit: z.Limit, Window: time.Duration(z.Window), Sync: time.Duration(z.Sync),
		Gateways: h.Gateways, Gateway: h.Gateway, Membership: h.Membership, Timeout: time.Duration(h.Timeout),
		Logger: ctx.Slogger().With("zone", name)}
	if cfg.Design == "" {
		cfg.Design = limiter.DefaultDesign
	}
	p := &pooled{}
	if h.Redis != nil {
		st, err := h.Redis.open(context.Background(), name)
		if err != nil {
			return nil, err
		}
		cfg.Store, p.closeStore = st, st.Close
		cfg.Fleet = fleetName(h.Fleet) + "/" + name
		// one name for this process in every claim: a reload that changes
		// a zone makes its new limiter while the old one still holds the
		// gateway's index, and the new one must take the claim over, not
		// wait for it to lapse
		cfg.Instance = processInstance()
	}
	l, err := limiter.New(cfg)
	if err != nil {
		if p.closeStore != nil {
			p.closeStore()
		}
		return nil, err
	}
	p.Limiter = l
	return p, nil
}

// processInstance names this process in the store's claims.
func processInstance() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("caddy:%s:%d", host, os.Getpid())
}

// fleetName is the fleet's name in Redis.
func fleetName(s string) string {
	if s == "" {
		return "caddy"
	}
	return s
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddy.Destructor            = (*pooled)(nil)
)
