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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/rls"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

// serveFlags are serve's command line.
type serveFlags struct {
	config, grpcAddr, httpAddr, redisAddr string
	gateways, gateway                     int
	reload, drain                         time.Duration
	logLevel, logFormat                   string
	tlsCert, tlsKey, tlsClientCA          string
	grpcOpts                              []grpc.ServerOption
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
with limits from an envoyproxy/ratelimit YAML file. The file is reloaded when
it changes; a file that does not parse keeps the previous limits in force.

Without --redis the limits are kept in the embedded store of this process.
With --redis, several serve processes share one Redis and act as the K
gateways of one fleet: give each a distinct --gateway index in [0, --gateways).

fleetlimit's own settings go in an optional top-level "fleetlimit" section of
the file (design, window_kind, sync, gateways, gateway, timeout, fail_closed,
response_headers, near_ratio); see docs/serve.md.`,
		Example: `  fleetlimit serve --config examples/ratelimit.yaml
  fleetlimit serve --config limits.yaml --redis 127.0.0.1:6379 --gateways 3 --gateway 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.config == "" {
				return usagef("--config FILE is required")
			}
			cfg, err := rls.Load(sf.config)
			if err != nil {
				return usageError{err}
			}
			set := &cfg.Settings
			if cmd.Flags().Changed("gateways") {
				set.Gateways = sf.gateways
			}
			if cmd.Flags().Changed("gateway") {
				set.Gateway = sf.gateway
			}
			if set.Gateways < 1 || set.Gateways > rls.MaxGateways || set.Gateway < 0 || set.Gateway >= set.Gateways {
				return usagef("gateway %d of %d: want 1 <= --gateways <= %d and 0 <= --gateway < --gateways", set.Gateway, set.Gateways, rls.MaxGateways)
			}
			log, err := newLogger(cmd.ErrOrStderr(), sf.logLevel, sf.logFormat)
			if err != nil {
				return usageError{err}
			}
			if sf.grpcOpts, err = grpcCredentials(sf); err != nil {
				return usageError{err}
			}
			redisstore.SetLogger(log)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, sf, cfg, log)
		},
	}
	f := c.Flags()
	f.StringVar(&sf.config, "config", "", "envoyproxy/ratelimit YAML configuration file")
	f.StringVar(&sf.grpcAddr, "grpc-addr", "127.0.0.1:8081", "gRPC listen address")
	f.StringVar(&sf.httpAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address (/json, /healthcheck, /metrics)")
	f.StringVar(&sf.redisAddr, "redis", "", "Redis address shared by the fleet (empty: the embedded store)")
	f.IntVar(&sf.gateways, "gateways", 1, "gateways in the fleet (overrides the config's fleetlimit.gateways)")
	f.IntVar(&sf.gateway, "gateway", 0, "this gateway's index (overrides the config's fleetlimit.gateway)")
	f.DurationVar(&sf.reload, "reload-interval", time.Second, "how often to check the config file for changes")
	f.StringVar(&sf.tlsCert, "grpc-tls-cert", "", "PEM certificate: serve gRPC over TLS")
	f.StringVar(&sf.tlsKey, "grpc-tls-key", "", "PEM private key of --grpc-tls-cert")
	f.StringVar(&sf.tlsClientCA, "grpc-tls-client-ca", "", "PEM CA bundle: require client certificates it signed (mutual TLS)")
	f.StringVar(&sf.logLevel, "log-level", "info", "debug, info, warn or error (debug includes the Redis client's own lines)")
	f.StringVar(&sf.logFormat, "log-format", "text", "text or json")
	f.DurationVar(&sf.drain, "drain-delay", time.Second, "on SIGTERM, how long to answer NOT_SERVING to health checks while still serving, before draining connections")
	return c
}

// openStore dials Redis, or returns nil for the embedded store.
func openStore(ctx context.Context, addr string) (store.Backend, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rs, err := redisstore.Dial(dctx, addr, redisstore.Options{})
	if err != nil {
		return nil, nil, err
	}
	return rs, func() { rs.Close() }, nil
}

// serve runs the service until ctx ends or a server fails, then shuts down.
func serve(ctx context.Context, sf serveFlags, cfg *rls.Config, log *slog.Logger) error {
	st, closeStore, err := openStore(ctx, sf.redisAddr)
	if err != nil {
		return runError{err}
	}
	defer closeStore()
	set := cfg.Settings
	lim, err := limiter.New(set.Limiter(st, log))
	if err != nil {
		return usageError{err}
	}
	svc := rls.NewService(cfg, lim)
	gl, err := net.Listen("tcp", sf.grpcAddr)
	if err != nil {
		lim.Close()
		return runError{err}
	}
	hl, err := net.Listen("tcp", sf.httpAddr)
	if err != nil {
		gl.Close()
		lim.Close()
		return runError{err}
	}
	gs := grpc.NewServer(sf.grpcOpts...)
	svc.Register(gs)
	go svc.WatchHealth(ctx, 100*time.Millisecond)
	hs := svc.HTTPServer(rls.HTTPTimeouts{})
	errs := make(chan error, 2)
	go func() { errs <- gs.Serve(gl) }()
	go func() { errs <- hs.Serve(hl) }()
	go rls.Watch(ctx, sf.config, svc, log, sf.reload)
	where := "embedded store"
	if sf.redisAddr != "" {
		where = "redis " + sf.redisAddr
	}
	log.Info("fleetlimit serve", "grpc", gl.Addr().String(), "http", hl.Addr().String(), "config", sf.config,
		"design", set.Design, "window_kind", set.WindowKind, "sync", set.Sync, "gateway", fmt.Sprintf("%d/%d", set.Gateway, set.Gateways), "store", where)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	// Not serving first, so that load balancers stop sending; then drain
	// the connections; then flush the store.
	svc.Drain()
	log.Info("fleetlimit serve: shutting down: health is NOT_SERVING; draining", "drain_delay", sf.drain)
	if serveErr == nil {
		time.Sleep(sf.drain)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	gs.GracefulStop()
	if err := lim.Close(); err != nil {
		log.Error("fleetlimit serve: final sync failed; unsynced admits are lost", "error", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return runError{serveErr}
	}
	return nil
}
