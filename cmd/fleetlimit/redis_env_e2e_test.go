package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fleetlimit/fleetlimit/internal/redistest"
)

// serve configured only by upstream's environment variables, on a runtime
// directory of config files, with Redis behind a password and TLS: its
// decisions and a reload are upstream's. Without the password, or without
// the CA, it refuses to start and says why.
func TestServeUpstreamEnvRedisPasswordTLS(t *testing.T) {
	p := redistest.NewPKI(t)
	cert, key, _ := p.Issue(t, "redis", x509.ExtKeyUsageServerAuth)
	ca := p.CAFile
	srv := redistest.StartWith(t, redistest.Options{Password: "s3cret", TLS: &redistest.TLSFiles{Cert: cert, Key: key, CA: ca}})
	env := []string{"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + srv.Addr, "REDIS_AUTH=s3cret", "REDIS_TLS=true", "REDIS_TLS_CACERT=" + ca}
	s := startUpstreamServe(t, env...)
	replayKey2(t, s)
	replayReload(t, s)

	for _, c := range []struct {
		name, say string
		env       []string
	}{
		{"no password", "NOAUTH", []string{"REDIS_URL=" + srv.Addr, "REDIS_TLS=true", "REDIS_TLS_CACERT=" + ca}},
		{"wrong password", "WRONGPASS", []string{"REDIS_URL=" + srv.Addr, "REDIS_AUTH=nope", "REDIS_TLS=true", "REDIS_TLS_CACERT=" + ca}},
		{"untrusted certificate", "certificate", []string{"REDIS_URL=" + srv.Addr, "REDIS_AUTH=s3cret", "REDIS_TLS=true"}},
		{"unsupported variable", "LOCAL_CACHE_SIZE_IN_BYTES", []string{"REDIS_URL=" + srv.Addr, "LOCAL_CACHE_SIZE_IN_BYTES=1000"}},
		{"xDS", "CONFIG_TYPE", []string{"CONFIG_TYPE=GRPC_XDS_SOTW"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "serve", "--runtime-root", "testdata/upstream", "--runtime-subdirectory", "ratelimit",
				"--grpc-addr", freeAddr(t), "--http-addr", freeAddr(t))
			cmd.Env = append(append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1"), c.env...)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), c.say) {
				t.Fatalf("serve: %v, saying:\n%s\nwant a failure that says %q", err, out, c.say)
			}
		})
	}
}

// Redis reached through a Sentinel, on a unix socket, and as a Cluster,
// each as upstream's REDIS_TYPE and REDIS_SOCKET_TYPE say, on upstream's
// algorithm and on fleetlimit's default design.
func TestServeRedisSentinelSocketCluster(t *testing.T) {
	t.Parallel() // waits on the clock and on its own servers: beside the others
	master := redistest.StartWith(t, redistest.Options{Password: "pw"})
	sentinel := redistest.StartSentinel(t, master)
	sock := redistest.StartWith(t, redistest.Options{Socket: true})
	cluster := redistest.StartCluster(t, 3)
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"sentinel", []string{"REDIS_TYPE=SENTINEL", "REDIS_URL=mymaster," + sentinel, "REDIS_AUTH=pw"}},
		{"unix socket", []string{"REDIS_SOCKET_TYPE=unix", "REDIS_URL=" + sock.Addr}},
		{"cluster", []string{"REDIS_TYPE=CLUSTER", "REDIS_URL=" + cluster}},
	} {
		for _, design := range []string{"central-counter", "shared-counter"} {
			t.Run(c.name+"/"+design, func(t *testing.T) {
				s := startUpstreamServe(t, append(c.env, "FLEETLIMIT_DESIGN="+design, "FLEETLIMIT_SYNC=100ms")...)
				replayKey2(t, s)
			})
		}
	}
}

// Two serve processes with one gateway index on one Redis: the second is
// refused, saying why, once the first's claim has outlived its TTL; with
// its own index it starts.
func TestServeRefusesASharedGatewayIndex(t *testing.T) {
	srv := redistest.Start(t)
	startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_GATEWAYS=2", "FLEETLIMIT_CLAIM_TTL=500ms")
	cmd := exec.Command(os.Args[0], "serve", "--runtime-root", "testdata/upstream", "--runtime-subdirectory", "ratelimit",
		"--grpc-addr", freeAddr(t), "--http-addr", freeAddr(t))
	cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1", "USE_STATSD=false", "REDIS_URL="+srv.Addr, "FLEETLIMIT_GATEWAYS=2", "FLEETLIMIT_CLAIM_TTL=500ms")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "gateway index 0 of 2 of fleet \"default\" is held by another live process") {
		t.Fatalf("a second gateway 0: %v, saying:\n%s", err, out)
	}
	s := startUpstreamServe(t, "REDIS_URL="+srv.Addr, "FLEETLIMIT_GATEWAYS=2", "FLEETLIMIT_GATEWAY=1", "FLEETLIMIT_CLAIM_TTL=500ms")
	replayKey2(t, s)
}
