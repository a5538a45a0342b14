package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/rls"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
	"github.com/fleetlimit/fleetlimit/window"
)

// serveFlags are serve's command line.
type serveFlags struct {
	config                              string
	runtimeRoot, runtimeSub, runtimeApp string
	ignoreDot, merge                    bool
	grpcAddr, grpcUDS, httpAddr         string
	metricsAddr, metricsPath, debugAddr string
	grpcMaxAge, grpcMaxAgeGrace         time.Duration
	redis                               redisFlags
	gateways, gateway                   int
	fleet                               string
	claimTTL                            time.Duration
	maxKeys                             int
	membership                          bool
	windowBuckets                       int
	set                                 settingFlags
	reload, drain                       time.Duration
	logLevel, logFormat                 string
	tlsCert, tlsKey, tlsClientCA        string
	grpcOpts                            []grpc.ServerOption
	tracing                             tracingFlags
}

// redisFlags say how to reach Redis.
type redisFlags struct {
	addr, typ, socket string
	tls, skipVerify   bool
	ca, cert, key     string
	pool              int
	dialTimeout       time.Duration
}

// settingFlags are fleetlimit's settings as flags, over the file's.
type settingFlags struct {
	design, windowKind, headers            string
	limitHeader, remainingHeader, resetHdr string
	cachePrefix                            string
	sync, timeout                          time.Duration
	nearRatio                              float64
	failClosed, responseHeaders, shadow    bool
	quota, metadata, stopIncrement         bool
}

// grpcCredentials are the gRPC server's transport credentials: TLS with
// --grpc-tls-cert and --grpc-tls-key, mutual TLS (client certificates
// required and verified against --grpc-tls-client-ca) with the CA too, and
// plaintext with none.
func grpcCredentials(sf serveFlags) ([]grpc.ServerOption, error) {
	if sf.tlsCert == "" && sf.tlsKey == "" {
		if sf.tlsClientCA != "" {
			return nil, errors.New("--grpc-tls-client-ca needs --grpc-tls-cert and --grpc-tls-key")
		}
		return nil, nil
	}
	if sf.tlsCert == "" || sf.tlsKey == "" {
		return nil, errors.New("--grpc-tls-cert and --grpc-tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(sf.tlsCert, sf.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("gRPC TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if sf.tlsClientCA != "" {
		pem, err := os.ReadFile(sf.tlsClientCA)
		if err != nil {
			return nil, fmt.Errorf("gRPC client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("gRPC client CA %s: no PEM certificate in it", sf.tlsClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(cfg))}, nil
}

// newLogger is the service's logger, as --log-level and --log-format ask.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opt := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opt)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opt)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func newServeCmd() *cobra.Command {
	var sf serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run an Envoy-compatible rate limit service",
		Long: `serve answers envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit on
--grpc-addr, and POST /json, GET /healthcheck and GET /metrics on --http-addr,
with limits from envoyproxy/ratelimit YAML: one --config file or directory, or
the directory --runtime-root/--runtime-subdirectory/--runtime-appdirectory as
upstream lays it out. The files are reloaded when they change; a configuration
that does not load keeps the previous limits in force.

Without --redis the limits are kept in the embedded store of this process.
With --redis, several serve processes share one Redis and act as the K
gateways of one fleet: give each a distinct --gateway index in [0, --gateways).

Every setting is a flag, an environment variable and, for fleetlimit's own,
a key of the file's optional "fleetlimit" section, in that order of
precedence. envoyproxy/ratelimit's variables (REDIS_URL, REDIS_AUTH,
RUNTIME_ROOT, PORT, GRPC_PORT, LOG_LEVEL, ...) keep their meanings; one whose
feature fleetlimit lacks is refused by name. See docs/serve.md.`,
		Example: `  fleetlimit serve --config examples/ratelimit.yaml
  fleetlimit serve --config limits.yaml --redis 127.0.0.1:6379 --gateways 3 --gateway 0
  RUNTIME_ROOT=/data RUNTIME_SUBDIRECTORY=ratelimit REDIS_URL=redis:6379 fleetlimit serve`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			notes, err := applyEnv(cmd.Flags(), lookupEnv)
			if err != nil {
				return usageError{err}
			}
			log, err := newLogger(cmd.ErrOrStderr(), sf.logLevel, sf.logFormat)
			if err != nil {
				return usageError{err}
			}
			for _, n := range notes {
				log.Warn("fleetlimit serve: " + n)
			}
			src, err := sf.source()
			if err != nil {
				return usageError{err}
			}
			cfg, err := src.Load()
			if err != nil {
				return usageError{err}
			}
			if err := sf.settings(cmd.Flags(), &cfg.Settings); err != nil {
				return usageError{err}
			}
			if err := cfg.Enforceable(cfg.Settings); err != nil {
				return usageError{err}
			}
			if sf.grpcOpts, err = grpcCredentials(sf); err != nil {
				return usageError{err}
			}
			if err := sf.tracing.validate(); err != nil {
				return usageError{err}
			}
			if err := sf.checkAddrs(); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, sf, src, cfg, log)
		},
	}
	serveFlagSet(c, &sf)
	return c
}

// serveFlagSet declares serve's flags.
func serveFlagSet(c *cobra.Command, sf *serveFlags) {
	f := c.Flags()
	f.StringVar(&sf.config, "config", "", "envoyproxy/ratelimit YAML file, or a directory of them")
	f.StringVar(&sf.runtimeRoot, "runtime-root", "", "upstream's runtime root (RUNTIME_ROOT): the config is root/subdirectory/appdirectory")
	f.StringVar(&sf.runtimeSub, "runtime-subdirectory", "", "upstream's RUNTIME_SUBDIRECTORY")
	f.StringVar(&sf.runtimeApp, "runtime-appdirectory", "config", "upstream's RUNTIME_APPDIRECTORY")
	f.BoolVar(&sf.ignoreDot, "ignore-dotfiles", false, "skip config files and directories whose names start with a dot")
	f.BoolVar(&sf.merge, "merge-domains", false, "let several files give one domain (MERGE_DOMAIN_CONFIG)")
	f.StringVar(&sf.grpcAddr, "grpc-addr", "127.0.0.1:8081", "gRPC listen address")
	f.StringVar(&sf.grpcUDS, "grpc-uds", "", "listen for gRPC on this unix socket instead of --grpc-addr")
	f.StringVar(&sf.httpAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address (/json, /healthcheck, /metrics)")
	f.StringVar(&sf.metricsAddr, "metrics-addr", "", "also serve the metrics on this address (PROMETHEUS_ADDR)")
	f.StringVar(&sf.metricsPath, "metrics-path", "/metrics", "the path of the metrics on --metrics-addr")
	f.StringVar(&sf.debugAddr, "debug-addr", "", "serve Go's profiles (/debug/pprof/) on this address (DEBUG_HOST, DEBUG_PORT); keep it private")
	f.DurationVar(&sf.grpcMaxAge, "grpc-max-connection-age", 24*time.Hour, "close a gRPC connection after this long with a GoAway")
	f.DurationVar(&sf.grpcMaxAgeGrace, "grpc-max-connection-age-grace", time.Hour, "then force it closed after this long")
	r := &sf.redis
	f.StringVar(&r.addr, "redis", "", "Redis shared by the fleet: host:port, redis://[user:password@]host:port[/db], rediss://... (TLS), a socket path with --redis-socket-type unix; nodes or master,sentinels separated by commas (empty: the embedded store)")
	f.StringVar(&r.typ, "redis-type", "single", "single, cluster or sentinel")
	f.StringVar(&r.socket, "redis-socket-type", "tcp", "tcp or unix")
	f.BoolVar(&r.tls, "redis-tls", false, "connect to Redis over TLS")
	f.StringVar(&r.ca, "redis-tls-ca", "", "PEM CA bundle that signed Redis's certificate (default: the system's)")
	f.StringVar(&r.cert, "redis-tls-cert", "", "PEM client certificate for Redis")
	f.StringVar(&r.key, "redis-tls-key", "", "PEM private key of --redis-tls-cert")
	f.BoolVar(&r.skipVerify, "redis-tls-skip-hostname-verification", false, "verify Redis's certificate chain but not its name")
	f.IntVar(&r.pool, "redis-pool-size", 0, "connections per Redis node (default go-redis's, 10 per CPU)")
	f.DurationVar(&r.dialTimeout, "redis-dial-timeout", 5*time.Second, "timeout to connect to Redis")
	f.IntVar(&sf.gateways, "gateways", 1, "gateways in the fleet (overrides the config's fleetlimit.gateways)")
	f.IntVar(&sf.gateway, "gateway", 0, "this gateway's index (overrides the config's fleetlimit.gateway); claimed on Redis, so that two live processes never share one")
	f.DurationVar(&sf.claimTTL, "claim-ttl", 10*time.Second, "how long this process's claim of its gateway index on Redis lasts unless renewed (every third of it); a process that finds its index held waits this long before refusing to start")
	f.IntVar(&sf.windowBuckets, "window-buckets", 0, "count each limit's window in B counters of unit/B instead of the exact log of admits: memory per key independent of the limit and the requests' costs, an admit counted up to one bucket longer (a fixed window: 0 or 1; 0: the exact log)")
	f.BoolVar(&sf.membership, "membership", false, "learn the fleet's size K and this process's index from Redis: each process joins --fleet, renews its membership every --claim-ttl/3, and K follows the processes that renew (instead of --gateways and --gateway)")
	f.IntVar(&sf.maxKeys, "max-keys", 100_000, "most keys this process holds; past it the least recently used of a sample of 16 is evicted (its unsynced admits still reach the store)")
	f.StringVar(&sf.fleet, "fleet", "default", "the fleet's name, for the gateway index claims on Redis: fleets that share one Redis need names of their own")
	st := &sf.set
	f.StringVar(&st.design, "design", design.Default, "coordination design (central-counter counts as envoyproxy/ratelimit does, in its Redis keys)")
	f.StringVar(&st.windowKind, "window-kind", "fixed", "fixed or sliding")
	f.DurationVar(&st.sync, "sync", time.Second, "sync interval Δ")
	f.DurationVar(&st.timeout, "timeout", 50*time.Millisecond, "store timeout of a request that waits on it")
	f.BoolVar(&st.failClosed, "fail-closed", false, "reject every request while the store is unreachable")
	f.BoolVar(&st.responseHeaders, "response-headers", false, "add rate limit headers to responses (LIMIT_RESPONSE_HEADERS_ENABLED)")
	f.StringVar(&st.headers, "headers", "draft", "header style: draft (RateLimit-Policy and RateLimit) or legacy (RateLimit-Limit, -Remaining, -Reset)")
	f.StringVar(&st.limitHeader, "limit-header", "", "legacy style's limit header name (LIMIT_LIMIT_HEADER; selects the legacy style)")
	f.StringVar(&st.remainingHeader, "remaining-header", "", "legacy style's remaining header name (LIMIT_REMAINING_HEADER; selects the legacy style)")
	f.StringVar(&st.resetHdr, "reset-header", "", "legacy style's reset header name (LIMIT_RESET_HEADER; selects the legacy style)")
	f.Float64Var(&st.nearRatio, "near-ratio", 0.8, "share of the limit past which a decision counts as near (NEAR_LIMIT_RATIO)")
	f.BoolVar(&st.shadow, "shadow-mode", false, "answer OK to every request, counting as usual (SHADOW_MODE)")
	f.BoolVar(&st.quota, "quota-mode", false, "treat every limit as a quota (QUOTA_MODE)")
	f.BoolVar(&st.metadata, "response-dynamic-metadata", false, "return dynamic metadata (RESPONSE_DYNAMIC_METADATA)")
	f.BoolVar(&st.stopIncrement, "stop-increment-over-limit", false, "central-counter: do not count a request against its other limits when one would go over")
	f.StringVar(&st.cachePrefix, "cache-key-prefix", "", "central-counter: prefix of its Redis keys (CACHE_KEY_PREFIX)")
	f.DurationVar(&sf.reload, "reload-interval", time.Second, "how often to check the config files for changes")
	f.StringVar(&sf.tlsCert, "grpc-tls-cert", "", "PEM certificate: serve gRPC over TLS")
	f.StringVar(&sf.tlsKey, "grpc-tls-key", "", "PEM private key of --grpc-tls-cert")
	f.StringVar(&sf.tlsClientCA, "grpc-tls-client-ca", "", "PEM CA bundle: require client certificates it signed (mutual TLS)")
	f.StringVar(&sf.logLevel, "log-level", "info", "debug, info, warn or error (debug includes the Redis client's own lines)")
	f.StringVar(&sf.logFormat, "log-format", "text", "text or json")
	sf.tracing.addFlags(f)
	f.DurationVar(&sf.drain, "drain-delay", time.Second, "on SIGTERM, how long to answer NOT_SERVING to health checks while still serving, before draining connections")
}

// source is where the configuration comes from: --config, or upstream's
// runtime directory.
func (sf serveFlags) source() (rls.Source, error) {
	src := rls.Source{Path: sf.config, Merge: sf.merge, IgnoreDotFiles: sf.ignoreDot}
	switch {
	case sf.config != "" && sf.runtimeRoot != "":
		return src, errors.New("give --config or --runtime-root (RUNTIME_ROOT), not both")
	case sf.runtimeRoot != "":
		src.Path = filepath.Join(sf.runtimeRoot, sf.runtimeSub, sf.runtimeApp)
	case sf.config == "":
		return src, errors.New("--config FILE|DIR or --runtime-root (RUNTIME_ROOT) is required")
	}
	return src, nil
}

// settings puts the flags given (or set from the environment) over the
// file's settings, and checks the result.
func (sf serveFlags) settings(f *pflag.FlagSet, set *rls.Settings) error {
	st := sf.set
	if f.Changed("window-kind") {
		k, err := window.ParseKind(st.windowKind)
		if err != nil {
			return fmt.Errorf("--window-kind: %w", err)
		}
		set.WindowKind = k
	}
	over := func(name string, apply func()) {
		if f.Changed(name) {
			apply()
		}
	}
	over("design", func() { set.Design = st.design })
	over("sync", func() { set.Sync = st.sync })
	over("timeout", func() { set.Timeout = st.timeout })
	over("fail-closed", func() { set.FailClosed = st.failClosed })
	over("gateways", func() { set.Gateways = sf.gateways })
	over("gateway", func() { set.Gateway = sf.gateway })
	over("fleet", func() { set.Fleet = sf.fleet })
	over("claim-ttl", func() { set.ClaimTTL = sf.claimTTL })
	over("max-keys", func() { set.MaxKeys = sf.maxKeys })
	over("membership", func() { set.Membership = sf.membership })
	over("window-buckets", func() { set.WindowBuckets = sf.windowBuckets })
	over("response-headers", func() { set.ResponseHeaders = st.responseHeaders })
	over("headers", func() { set.Headers = rls.HeaderStyle(st.headers) })
	over("limit-header", func() { set.LimitHeader = st.limitHeader })
	over("remaining-header", func() { set.RemainingHeader = st.remainingHeader })
	over("reset-header", func() { set.ResetHeader = st.resetHdr })
	if set.LimitHeader != "" || set.RemainingHeader != "" || set.ResetHeader != "" {
		if f.Changed("headers") && set.Headers != rls.HeadersLegacy {
			return errors.New("--limit-header, --remaining-header and --reset-header name the legacy headers: they need --headers legacy")
		}
		set.Headers = rls.HeadersLegacy
	}
	over("near-ratio", func() { set.NearRatio = st.nearRatio })
	over("shadow-mode", func() { set.ShadowMode = st.shadow })
	over("quota-mode", func() { set.QuotaMode = st.quota })
	over("response-dynamic-metadata", func() { set.DynamicMetadata = st.metadata })
	over("stop-increment-over-limit", func() { set.StopIncrement = st.stopIncrement })
	over("cache-key-prefix", func() { set.CacheKeyPrefix = st.cachePrefix })
	return set.Validate()
}

// redisConn is how to reach Redis, from the flags and REDIS_AUTH and
// REDIS_SENTINEL_AUTH ("password" or "user:password", as upstream).
func (r redisFlags) conn() (redisstore.Options, error) {
	c, err := redisstore.ParseURL(r.addr, r.typ, r.socket)
	if err != nil {
		return c, err
	}
	if auth, ok := lookupEnv("REDIS_AUTH"); ok {
		if user, pass, found := strings.Cut(auth, ":"); found {
			c.Username, c.Password = user, pass
		} else {
			c.Password = auth
		}
	}
	c.SentinelPassword, _ = lookupEnv("REDIS_SENTINEL_AUTH")
	c.PoolSize, c.DialTimeout = r.pool, r.dialTimeout
	if r.tls || c.TLS != nil {
		if c.TLS, err = (redisstore.TLSFiles{CA: r.ca, Cert: r.cert, Key: r.key, SkipNameCheck: r.skipVerify}).Config(); err != nil {
			return c, fmt.Errorf("redis TLS: %w", err)
		}
	} else if r.ca != "" || r.cert != "" || r.key != "" || r.skipVerify {
		return c, errors.New("--redis-tls-ca, --redis-tls-cert, --redis-tls-key and --redis-tls-skip-hostname-verification need --redis-tls (or a rediss:// address)")
	}
	return c, nil
}

// openStore connects to Redis as sf says, the client's own lines logged to
// log, or returns nil for the embedded store.
func openStore(ctx context.Context, r redisFlags, log *slog.Logger) (store.Backend, func(), error) {
	if r.addr == "" {
		return nil, func() {}, nil
	}
	c, err := r.conn()
	if err != nil {
		return nil, nil, usageError{err}
	}
	dctx, cancel := context.WithTimeout(ctx, max(r.dialTimeout, time.Second))
	defer cancel()
	c.Logger = log
	rs, err := redisstore.New(dctx, c)
	if err != nil {
		return nil, nil, runError{err}
	}
	return rs, func() { rs.Close() }, nil
}

// checkAddrs names a listen address that is not host:port (an empty
// host is every interface); that one is in use is found when it is opened.
func (sf serveFlags) checkAddrs() error {
	for _, a := range []struct{ flag, addr string }{{"--grpc-addr", sf.grpcAddr}, {"--http-addr", sf.httpAddr},
		{"--metrics-addr", sf.metricsAddr}, {"--debug-addr", sf.debugAddr}} {
		if a.addr == "" || (a.flag == "--grpc-addr" && sf.grpcUDS != "") {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err != nil {
			return fmt.Errorf("%s %q: want host:port: %v", a.flag, a.addr, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Errorf("%s %q: the port is not a number from 0 to 65535 or a service name", a.flag, a.addr)
		}
	}
	return nil
}

// listeners opens the gRPC (TCP or unix socket) and HTTP listeners.
func listeners(sf serveFlags) (gl, hl net.Listener, err error) {
	if sf.grpcUDS != "" {
		os.Remove(sf.grpcUDS) // a socket left by an earlier run
		gl, err = net.Listen("unix", sf.grpcUDS)
	} else {
		gl, err = net.Listen("tcp", sf.grpcAddr)
	}
	if err != nil {
		return nil, nil, err
	}
	if hl, err = net.Listen("tcp", sf.httpAddr); err != nil {
		gl.Close()
		return nil, nil, err
	}
	return gl, hl, nil
}

// serve runs the service until ctx ends or a server fails, then shuts down.
func serve(ctx context.Context, sf serveFlags, src rls.Source, cfg *rls.Config, log *slog.Logger) error {
	st, closeStore, err := openStore(ctx, sf.redis, log)
	if err != nil {
		return err
	}
	defer closeStore()
	set := cfg.Settings
	tp, err := sf.tracing.provider(ctx)
	if err != nil {
		return usageError{err}
	}
	lc := set.Limiter(st, log)
	var tracing rls.Tracing
	if tp != nil {
		defer flushTraces(tp, log)
		tracing = rls.Tracing{Tracer: tp.Tracer("fleetlimit"), Values: sf.tracing.values}
		lc.StoreSpan = rls.StoreSpan(tracing.Tracer)
	}
	lim, err := limiter.New(lc)
	if err != nil {
		return usageError{err}
	}
	svc := rls.NewService(cfg, lim)
	svc.SetTracing(tracing)
	gl, hl, err := listeners(sf)
	if err != nil {
		lim.Close()
		return runError{err}
	}
	// Stream workers: a request is served on a goroutine that lives on,
	// whose stack has already grown, instead of a new one per request,
	// whose stack growth cost 14% of serve's CPU under load (the profile in
	// docs/performance.md). A request finding every worker busy still gets
	// a goroutine of its own.
	opts := append(sf.grpcOpts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: sf.grpcMaxAge, MaxConnectionAgeGrace: sf.grpcMaxAgeGrace}),
		grpc.NumStreamWorkers(uint32(4*runtime.GOMAXPROCS(0))))
	gs := grpc.NewServer(opts...)
	svc.Register(gs)
	go svc.WatchHealth(ctx, 100*time.Millisecond)
	hs := svc.HTTPServer(rls.HTTPTimeouts{})
	errs := make(chan error, 3)
	go func() { errs <- gs.Serve(gl) }()
	go func() { errs <- hs.Serve(hl) }()
	ms, ds := sf.sideServers(svc, errs, log)
	if ds != nil {
		defer ds.Close()
	}
	go rls.Watch(ctx, src, svc, log, sf.reload)
	sf.logServing(log, src, set, lim, gl, hl)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	return sf.shutdown(log, svc, lim, gs, []*http.Server{hs, ms}, serveErr)
}

// sideServers starts the metrics and debug listeners the flags ask for
// (nil for each they leave out), their errors sent to errs.
func (sf serveFlags) sideServers(svc *rls.Service, errs chan<- error, log *slog.Logger) (ms, ds *http.Server) {
	if sf.metricsAddr != "" {
		ms = &http.Server{Addr: sf.metricsAddr, Handler: metricsOnly(svc.Handler(), sf.metricsPath), ReadHeaderTimeout: 5 * time.Second}
		go func() { errs <- ms.ListenAndServe() }()
	}
	if sf.debugAddr != "" {
		if host, _, _ := net.SplitHostPort(sf.debugAddr); host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			log.Warn("fleetlimit serve: the debug listener serves Go's profiles on every interface; set DEBUG_HOST=127.0.0.1 (or --debug-addr 127.0.0.1:PORT) to keep them private",
				"debug", sf.debugAddr)
		}
		ds = &http.Server{Addr: sf.debugAddr, Handler: debugMux(), ReadHeaderTimeout: 5 * time.Second}
		go func() { errs <- ds.ListenAndServe() }()
	}
	return ms, ds
}

// logServing says, once, what serve is serving and how.
func (sf serveFlags) logServing(log *slog.Logger, src rls.Source, set rls.Settings, lim *limiter.Limiter, gl, hl net.Listener) {
	where := "embedded store"
	if sf.redis.addr != "" {
		where = fmt.Sprintf("redis (%s) %s", sf.redis.typ, redactURL(sf.redis.addr))
	}
	log.Info("fleetlimit serve", "grpc", gl.Addr().String(), "http", hl.Addr().String(), "config", src.Path,
		"design", set.Design, "window_kind", set.WindowKind, "window_buckets", set.WindowBuckets, "sync", set.Sync,
		"gateway", fmt.Sprintf("%d/%d", lim.Fleet().Gateway, lim.Fleet().Gateways), "membership", set.Membership, "store", where,
		"tracing", sf.tracing.on)
}

// shutdown stops serving after serveErr (nil: a signal): not serving
// first, so that load balancers stop sending; then it drains the
// connections; then it flushes the store.
func (sf serveFlags) shutdown(log *slog.Logger, svc *rls.Service, lim *limiter.Limiter, gs *grpc.Server, hss []*http.Server, serveErr error) error {
	svc.Drain()
	log.Info("fleetlimit serve: shutting down: health is NOT_SERVING; draining", "drain_delay", sf.drain)
	if serveErr == nil {
		time.Sleep(sf.drain)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range hss {
		if h != nil {
			h.Shutdown(sctx)
		}
	}
	gs.GracefulStop()
	if err := svc.Close(); err != nil {
		log.Error("fleetlimit serve: the quota limiter's final sync failed", "error", err)
	}
	if err := lim.Close(); err != nil {
		log.Error("fleetlimit serve: final sync failed; unsynced admits are lost", "error", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return runError{serveErr}
	}
	return nil
}

// debugMux serves Go's profiles, as upstream's debug port does.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// metricsOnly serves h's /metrics at path, and nothing else.
func metricsOnly(h http.Handler, path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/metrics"
		h.ServeHTTP(w, r2)
	})
}

// redactURL hides the password of redis:// addresses, for logs.
func redactURL(addr string) string {
	parts := strings.Split(addr, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 && strings.Contains(p, "://") {
			parts[i] = p[:strings.Index(p, "://")+3] + "*****" + p[at:]
		}
	}
	return strings.Join(parts, ",")
}
