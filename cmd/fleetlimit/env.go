package main

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// envoyproxy/ratelimit is configured by environment variables; serve reads
// the same names with the same meanings wherever fleetlimit has the
// feature, so that a deployment's environment can stay as it is. A flag
// given on the command line wins over its variable. A variable that would
// change what upstream does and that fleetlimit cannot do is an error that
// names it; one that only tunes upstream's own machinery is said in the log.

// envVar is one environment variable serve reads.
type envVar struct {
	name string
	flag string // the serve flag it sets; "" for the special cases
	// conv turns the variable's value into the flag's; nil: as it is.
	conv func(string) (string, error)
	// refuse, when not nil, says why a value cannot be honoured ("" : it
	// can).
	refuse func(v string) string
	// note is logged when the variable is set and has no effect here.
	note string
	// when names a variable that must be true for this one to count, as
	// upstream reads TLS files only with TLS on.
	when string
}

// envVars are the variables serve reads: upstream's, then fleetlimit's own.
var envVars = []envVar{
	{name: "LOG_LEVEL", flag: "log-level", conv: logLevel},
	{name: "LOG_FORMAT", flag: "log-format", conv: lower},
	{name: "GRPC_UDS", flag: "grpc-uds"},
	{name: "GRPC_SERVER_USE_TLS", refuse: boolOnly},
	{name: "GRPC_SERVER_TLS_CERT", when: "GRPC_SERVER_USE_TLS", flag: "grpc-tls-cert"},
	{name: "GRPC_SERVER_TLS_KEY", when: "GRPC_SERVER_USE_TLS", flag: "grpc-tls-key"},
	{name: "GRPC_CLIENT_TLS_CACERT", when: "GRPC_SERVER_USE_TLS", flag: "grpc-tls-client-ca"},
	{name: "GRPC_CLIENT_TLS_SAN", refuse: always("checking a client certificate's SAN is not supported; the client CA alone decides")},
	{name: "GRPC_MAX_CONNECTION_AGE", flag: "grpc-max-connection-age"},
	{name: "GRPC_MAX_CONNECTION_AGE_GRACE", flag: "grpc-max-connection-age-grace"},
	{name: "CONFIG_TYPE", refuse: func(v string) string {
		if strings.EqualFold(v, "FILE") {
			return ""
		}
		return "only FILE is supported: fleetlimit reads its limits from files, not from an xDS server"
	}},
	{name: "FORCE_START_WITHOUT_INITIAL_CONFIG", refuse: onlyFalse("serve never starts without a configuration that loads")},
	{name: "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", refuse: boolOnly}, // serve is healthy only with a configuration loaded, always
	{name: "RUNTIME_ROOT", flag: "runtime-root"},
	{name: "RUNTIME_SUBDIRECTORY", flag: "runtime-subdirectory"},
	{name: "RUNTIME_APPDIRECTORY", flag: "runtime-appdirectory"},
	{name: "RUNTIME_IGNOREDOTFILES", flag: "ignore-dotfiles", conv: boolValue},
	// serve checks the config files every --reload-interval: a moved
	// symbolic link and a changed file both reload, whatever this says.
	{name: "RUNTIME_WATCH_ROOT", refuse: boolOnly},
	{name: "MERGE_DOMAIN_CONFIG", flag: "merge-domains", conv: boolValue},
	{name: "USE_STATSD", refuse: onlyFalse("fleetlimit has no statsd sink; its metrics are Prometheus's, on /metrics (set USE_STATSD=false)")},
	{name: "USE_DOG_STATSD", refuse: onlyFalse("fleetlimit has no DogStatsD sink; its metrics are Prometheus's, on /metrics")},
	{name: "DISABLE_STATS", refuse: onlyFalse("fleetlimit always serves its metrics on /metrics")},
	// Prometheus metrics are always on the HTTP address's /metrics;
	// PROMETHEUS_ADDR adds a listener of their own.
	{name: "USE_PROMETHEUS", refuse: boolOnly},
	{name: "PROMETHEUS_ADDR", flag: "metrics-addr"},
	{name: "PROMETHEUS_PATH", flag: "metrics-path"},
	{name: "PROMETHEUS_MAPPER_YAML", refuse: always("fleetlimit's metric names are its own (docs/serve.md); a statsd mapper does not apply")},
	{name: "TRACING_ENABLED", flag: "tracing", conv: boolValue},
	{name: "TRACING_EXPORTER_PROTOCOL", flag: "tracing-protocol", conv: lower},
	{name: "TRACING_SERVICE_NAME", flag: "tracing-service-name"},
	{name: "TRACING_SERVICE_NAMESPACE", flag: "tracing-service-namespace"},
	{name: "TRACING_SERVICE_INSTANCE_ID", flag: "tracing-service-instance-id"},
	{name: "TRACING_SAMPLING_RATE", flag: "tracing-sampling-rate"},
	{name: "BACKEND_TYPE", refuse: func(v string) string {
		if strings.EqualFold(v, "redis") {
			return ""
		}
		return "only redis is supported (without REDIS_URL, fleetlimit's embedded store)"
	}},
	{name: "REDIS_URL", flag: "redis"},
	{name: "REDIS_AUTH"},          // read by redisConn: a secret is no flag
	{name: "REDIS_SENTINEL_AUTH"}, // likewise
	{name: "REDIS_TYPE", flag: "redis-type", conv: lower},
	{name: "REDIS_SOCKET_TYPE", flag: "redis-socket-type", conv: lower},
	{name: "REDIS_POOL_SIZE", flag: "redis-pool-size"},
	{name: "REDIS_TLS", flag: "redis-tls", conv: boolValue},
	{name: "REDIS_TLS_CACERT", when: "REDIS_TLS", flag: "redis-tls-ca"},
	{name: "REDIS_TLS_CLIENT_CERT", when: "REDIS_TLS", flag: "redis-tls-cert"},
	{name: "REDIS_TLS_CLIENT_KEY", when: "REDIS_TLS", flag: "redis-tls-key"},
	{name: "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", when: "REDIS_TLS", flag: "redis-tls-skip-hostname-verification", conv: boolValue},
	{name: "REDIS_TIMEOUT", flag: "redis-dial-timeout"},
	{name: "REDIS_PERSECOND", refuse: onlyFalse("a separate Redis for per-second limits is not supported")},
	{name: "REDIS_PIPELINE_WINDOW", note: "go-redis pipelines fleetlimit's own batches; this radix setting has no counterpart"},
	{name: "REDIS_PIPELINE_LIMIT", note: "unused upstream too"},
	{name: "REDIS_CLUSTER_PIPELINE_PARALLELISM", note: "go-redis sends a Cluster pipeline to its nodes in parallel"},
	{name: "REDIS_POOL_ON_EMPTY_BEHAVIOR", refuse: func(v string) string {
		if strings.EqualFold(v, "WAIT") {
			return ""
		}
		return "only WAIT: a request waits for a connection, within the store timeout"
	}},
	// the health check fails while the store is unreachable, always
	{name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", refuse: boolOnly},
	{name: "REDIS_STARTUP_INITIAL_INTERVAL", note: "serve connects once at start and falls back to the local quota while Redis is down"},
	{name: "REDIS_STARTUP_MAX_INTERVAL", note: "serve connects once at start and falls back to the local quota while Redis is down"},
	{name: "REDIS_STARTUP_MAX_ELAPSED_TIME", note: "serve connects once at start and falls back to the local quota while Redis is down"},
	{name: "LOCAL_CACHE_SIZE_IN_BYTES", refuse: func(v string) string {
		if v == "0" {
			return ""
		}
		return "the local over-limit cache is not supported: fleetlimit's local designs (shared-counter, ...) decide without a round trip instead"
	}},
	{name: "EXPIRATION_JITTER_MAX_SECONDS", note: "central-counter's keys expire at the end of their window, without jitter"},
	{name: "NEAR_LIMIT_RATIO", flag: "near-ratio"},
	{name: "CACHE_KEY_PREFIX", flag: "cache-key-prefix"},
	{name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", flag: "stop-increment-over-limit", conv: boolValue},
	{name: "LIMIT_RESPONSE_HEADERS_ENABLED", flag: "response-headers", conv: boolValue},
	{name: "LIMIT_LIMIT_HEADER", flag: "limit-header"},
	{name: "LIMIT_REMAINING_HEADER", flag: "remaining-header"},
	{name: "LIMIT_RESET_HEADER", flag: "reset-header"},
	{name: "SHADOW_MODE", flag: "shadow-mode", conv: boolValue},
	{name: "QUOTA_MODE", flag: "quota-mode", conv: boolValue},
	{name: "RESPONSE_DYNAMIC_METADATA", flag: "response-dynamic-metadata", conv: boolValue},
	{name: "MEMCACHE_HOST_PORT", refuse: always("memcache is not supported")},
	{name: "MEMCACHE_SRV", refuse: always("memcache is not supported")},
	{name: "REDIS_PERSECOND_URL", refuse: always("a separate Redis for per-second limits is not supported")},

	{name: "FLEETLIMIT_CONFIG", flag: "config"},
	{name: "FLEETLIMIT_DESIGN", flag: "design"},
	{name: "FLEETLIMIT_WINDOW_KIND", flag: "window-kind"},
	{name: "FLEETLIMIT_WINDOW_BUCKETS", flag: "window-buckets"},
	{name: "FLEETLIMIT_SYNC", flag: "sync"},
	{name: "FLEETLIMIT_GATEWAYS", flag: "gateways"},
	{name: "FLEETLIMIT_GATEWAY", flag: "gateway"},
	{name: "FLEETLIMIT_FLEET", flag: "fleet"},
	{name: "FLEETLIMIT_CLAIM_TTL", flag: "claim-ttl"},
	{name: "FLEETLIMIT_MAX_KEYS", flag: "max-keys"},
	{name: "FLEETLIMIT_MEMBERSHIP", flag: "membership", conv: boolValue},
	{name: "FLEETLIMIT_TIMEOUT", flag: "timeout"},
	{name: "FLEETLIMIT_FAIL_CLOSED", flag: "fail-closed", conv: boolValue},
	{name: "FLEETLIMIT_HEADERS", flag: "headers"},
	{name: "FLEETLIMIT_DRAIN_DELAY", flag: "drain-delay"},
}

// applyEnv sets every serve flag not given on the command line from its
// environment variable, and returns the notes to log. env looks a variable
// up (os.LookupEnv).
func applyEnv(fs *pflag.FlagSet, env func(string) (string, bool)) (notes []string, err error) {
	var bad []string
	for _, v := range envVars {
		val, ok := env(v.name)
		if !ok {
			continue
		}
		if v.when != "" {
			if on, _ := env(v.when); on != "" {
				if b, _ := strconv.ParseBool(on); !b {
					continue
				}
			} else {
				continue
			}
		}
		if v.refuse != nil {
			if why := v.refuse(val); why != "" {
				bad = append(bad, fmt.Sprintf("%s=%s: %s", v.name, val, why))
				continue
			}
		}
		if v.note != "" {
			notes = append(notes, fmt.Sprintf("%s is set: %s", v.name, v.note))
		}
		if v.flag == "" || fs.Changed(v.flag) {
			continue
		}
		if v.conv != nil {
			if val, err = v.conv(val); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", v.name, err))
				continue
			}
		}
		if err := fs.Set(v.flag, val); err != nil {
			bad = append(bad, fmt.Sprintf("%s=%q: %v", v.name, val, err))
		}
	}
	if msg := addrsFromEnv(fs, env); msg != "" {
		bad = append(bad, msg)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("environment: %s", strings.Join(bad, "; "))
	}
	return notes, nil
}

// addrVars are the listen addresses' variables: a flag set from a host
// and a port, and the port's default.
var addrVars = []struct{ flag, host, port, defPort string }{
	{"http-addr", "HOST", "PORT", "8080"}, {"grpc-addr", "GRPC_HOST", "GRPC_PORT", "8081"},
	{"debug-addr", "DEBUG_HOST", "DEBUG_PORT", "6070"},
}

// addrsFromEnv sets --http-addr from HOST and PORT, --grpc-addr from
// GRPC_HOST and GRPC_PORT, and --debug-addr from DEBUG_HOST and DEBUG_PORT
// (upstream's defaults: 0.0.0.0, 8080, 8081 and 6070; upstream always
// opens its debug port, fleetlimit only when asked).
func addrsFromEnv(fs *pflag.FlagSet, env func(string) (string, bool)) string {
	var bad []string
	for _, a := range addrVars {
		host, hok := env(a.host)
		port, pok := env(a.port)
		if (!hok && !pok) || fs.Changed(a.flag) {
			continue
		}
		if !hok {
			host = "0.0.0.0"
		}
		if !pok {
			port = a.defPort
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			bad = append(bad, fmt.Sprintf("%s=%q: want a port number", a.port, port))
			continue
		}
		fs.Set(a.flag, net.JoinHostPort(host, port))
	}
	return strings.Join(bad, "; ")
}

// logLevel maps upstream's logrus levels onto serve's.
func logLevel(v string) (string, error) {
	switch l := strings.ToLower(v); l {
	case "debug", "info", "warn", "error":
		return l, nil
	case "warning":
		return "warn", nil
	}
	return "", fmt.Errorf("log level %q: want debug, info, warn or error", v)
}

func lower(v string) (string, error) { return strings.ToLower(v), nil }

// boolValue checks a boolean as upstream's envconfig reads one.
func boolValue(v string) (string, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", fmt.Errorf("%q is not true or false", v)
	}
	return strconv.FormatBool(b), nil
}

func boolOnly(v string) string {
	if _, err := boolValue(v); err != nil {
		return err.Error()
	}
	return ""
}

// onlyFalse refuses any value but false, saying why.
func onlyFalse(why string) func(string) string {
	return func(v string) string {
		if b, err := strconv.ParseBool(v); err == nil && !b {
			return ""
		}
		return why
	}
}

func always(why string) func(string) string { return func(string) string { return why } }

// lookupEnv is os.LookupEnv, treating an empty value as unset, as
// upstream's envconfig does for most settings.
func lookupEnv(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	return v, ok && v != ""
}
