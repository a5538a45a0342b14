// Package redistest starts real redis-server processes on free loopback
// ports for tests, and stops them when the test ends. It never touches a
// Redis it did not start.
package redistest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server started for one test.
type Server struct {
	Addr    string // host:port, or the socket's path with Options.Socket
	t       testing.TB
	port    int
	dir     string
	cmd     *exec.Cmd
	persist bool
	bin     string
	opt     Options
	// hold keeps a stopped server's port while it is down, refusing every
	// connection, so that no other test's server takes it before Restart.
	hold net.Listener
}

// Options ask for a server that is not plain: behind a password, over
// TLS only, or on a unix socket only.
type Options struct {
	Password string
	// TLS, when not nil, makes the port TLS only, with this certificate.
	TLS *TLSFiles
	// Socket listens on a unix socket in the test's directory instead of
	// a port.
	Socket bool
}

// TLSFiles are PEM files: the server's certificate and key, and the CA
// that signed it.
type TLSFiles struct{ Cert, Key, CA string }

// Binary returns the redis-server to use: $REDIS_SERVER or the one on PATH.
func Binary() (string, error) {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b, nil
	}
	return exec.LookPath("redis-server")
}

// requireBinary returns the redis-server to use, or skips t when none is
// installed (failing instead when FLEETLIMIT_REQUIRE_REDIS is set).
func requireBinary(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("FLEETLIMIT_REQUIRE_REDIS") != "" {
			t.Fatalf("redis-server is required but not found: %v", err)
		}
		t.Skip("redis-server not installed; ./scripts/test installs it")
	}
	return bin
}

// Start starts a redis-server for t, or skips t when none is installed
// (failing instead when FLEETLIMIT_REQUIRE_REDIS is set, as the test script
// sets it).
func Start(t testing.TB) *Server { t.Helper(); return start(t, false, Options{}) }

// StartWith is Start with the given options.
func StartWith(t testing.TB, opt Options) *Server { t.Helper(); return start(t, false, opt) }

// StartPersistent is Start with every write appended and synced to disk, so
// that the data outlives Stop and Restart.
func StartPersistent(t testing.TB) *Server { t.Helper(); return start(t, true, Options{}) }

func start(t testing.TB, persist bool, opt Options) *Server {
	t.Helper()
	bin := requireBinary(t)
	port := freePort(t)
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), t: t, port: port, dir: t.TempDir(), persist: persist, bin: bin, opt: opt}
	if opt.Socket {
		s.Addr = filepath.Join(s.dir, "redis.sock")
	}
	s.Restart()
	t.Cleanup(func() { s.Stop(); s.unhold() })
	return s
}

// Restart starts the server again on the same port after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	aof := []string{"--appendonly", "no"}
	if s.persist {
		aof = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log")}, aof...)
	switch o := s.opt; {
	case o.Socket:
		args = append(args, "--port", "0", "--unixsocket", s.Addr, "--unixsocketperm", "700")
	case o.TLS != nil:
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port), "--tls-cert-file", o.TLS.Cert,
			"--tls-key-file", o.TLS.Key, "--tls-ca-cert-file", o.TLS.CA, "--tls-auth-clients", "no")
	}
	if s.opt.Password != "" {
		args = append(args, "--requirepass", s.opt.Password)
	}
	s.unhold()
	s.cmd = exec.Command(s.bin, args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	waitPing(s.t, s.ClientOptions(), filepath.Join(s.dir, "redis.log"))
}

// Forget makes the server lose every key, the way an operator or a crash
// would: how is "flushall" (FLUSHALL) or "restart" (a restart without
// persistence, unless the server was started persistent).
func (s *Server) Forget(how string) {
	s.t.Helper()
	switch how {
	case "flushall":
		c := s.Client()
		defer c.Close()
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			s.t.Fatal(err)
		}
	case "restart":
		s.Stop()
		s.Restart()
	default:
		s.t.Fatalf("redistest: Forget(%q): want flushall or restart", how)
	}
}

// ClientOptions are go-redis options that reach the server.
func (s *Server) ClientOptions() *redis.Options {
	o := &redis.Options{Addr: s.Addr, Password: s.opt.Password}
	if s.opt.Socket {
		o.Network = "unix"
	}
	if s.opt.TLS != nil {
		pem, err := os.ReadFile(s.opt.TLS.CA)
		if err != nil {
			s.t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		o.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	return o
}

// StartSentinel starts a Sentinel watching s as master "mymaster" and
// returns its address, once it knows the master.
func StartSentinel(t testing.TB, s *Server) string {
	t.Helper()
	bin := requireBinary(t)
	port := freePort(t)
	dir := t.TempDir()
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n",
		port, dir, filepath.Join(dir, "sentinel.log"), s.port)
	if s.opt.Password != "" {
		conf += "sentinel auth-pass mymaster " + s.opt.Password + "\n"
	}
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, path, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Fatalf("sentinel on %s did not know its master within 10s: %v\n%s", addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Down is Stop, but the port stays held until Restart, every connection
// closed as soon as it is accepted (clients see EOF, not "connection
// refused"): a port left free is free for every test running beside this
// one, and a server of theirs on it would answer this one's clients.
func (s *Server) Down() {
	s.Stop()
	if s.opt.Socket {
		return
	}
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))); err == nil {
		s.hold = l
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close() // down: every connection is refused at once
			}
		}()
	}
}

// unhold gives the held port back.
func (s *Server) unhold() {
	if s.hold != nil {
		s.hold.Close()
		s.hold = nil
	}
}

// Pause stops the server's process (SIGSTOP): it keeps its connections and
// data but answers nothing, as a Redis stuck in a long command or a frozen
// host does, until Resume.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
}

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatal(err)
	}
}

// Client returns a new client for the server.
func (s *Server) Client() *redis.Client { return redis.NewClient(s.ClientOptions()) }

func (s *Server) String() string { return fmt.Sprintf("redis-server %s", s.Addr) }

// StartCluster starts an n-node Redis Cluster (masters only) on free
// loopback ports for t and returns the nodes' addresses, comma-separated.
func StartCluster(t testing.TB, n int) string {
	t.Helper()
	bin := requireBinary(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	var addrs []string
	for i := 0; i < n; i++ {
		port := freePorts(t, 10000) // the cluster bus listens on port+10000
		dir := t.TempDir()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		waitPing(t, &redis.Options{Addr: addr}, filepath.Join(dir, "redis.log"))
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		for {
			out, _ := exec.Command(cli, "-h", "127.0.0.1", "-p", a[len("127.0.0.1:"):], "cluster", "info").Output()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ready:\n%s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return strings.Join(addrs, ",")
}

func freePort(t testing.TB) int { t.Helper(); return FreePort(t) }

// FreePort returns a loopback port free when asked and reserved for t, for
// a server the test starts. It is drawn at random from below the kernel's
// range of ephemeral ports (ip_local_port_range), which the kernel hands
// out for bind(0) and outgoing connections, and it is reserved against
// every other test process on the machine (an flock on a file named by the
// port, held until t ends or the process dies): a port closed and bound
// again a moment later by a child process was otherwise now and then taken
// meanwhile by another test binary's draw ("address already in use").
func FreePort(t testing.TB) int { t.Helper(); return freePorts(t, 0) }

// freePorts is FreePort for a port p whose p+gap is free and reserved too
// (a cluster node's bus listens on its port + 10000).
func freePorts(t testing.TB, gap int) int {
	t.Helper()
	lo, hi := 20000, ephemeralStart()-1-gap
	for i := 0; hi > lo && i < 500; i++ {
		p := lo + rand.IntN(hi-lo+1)
		if reserve(t, p) && (gap == 0 || reserve(t, p+gap)) {
			return p
		}
	}
	t.Fatalf("redistest: no free loopback port in [%d, %d] after 500 draws", lo, hi)
	return 0
}

// reserve takes port p for t if no other test process holds it and it can
// be bound now; the reservation lasts until t ends.
func reserve(t testing.TB, p int) bool {
	dir := filepath.Join(os.TempDir(), "fleetlimit-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		f.Close()
		return false
	}
	l.Close()
	t.Cleanup(func() { f.Close() })
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range (32768
// when it cannot tell).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	return 32768
}

func waitPing(t testing.TB, opt *redis.Options, logFile string) {
	t.Helper()
	addr := opt.Addr
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("redis-server on %s did not answer within 10s: %v\n%s", addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
