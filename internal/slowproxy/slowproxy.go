// Package slowproxy is a TCP proxy for tests that makes what it carries
// late: each round trip through it takes a delay longer, a delay the test
// sets and changes while connections are open, so that a real redis-server
// behind it is slow for a moment (a spike), or for good, as a forking,
// swapping or far-away Redis is. Bytes keep their order: bytes read after a
// spike ends wait behind those read during it, as behind a stalled server.
// It listens on loopback only and never connects anywhere but its upstream.
package slowproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards connections from Addr to its upstream, late.
type Proxy struct {
	Addr     string // host:port to connect to instead of the upstream
	upstream string
	ln       net.Listener
	delay    atomic.Int64 // ns added to a round trip
	mu       sync.Mutex
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
	closed   atomic.Bool
}

// Start starts a proxy to upstream on a free loopback port for t, and
// stops it when t ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// SetDelay makes every round trip that starts from now on take d longer:
// each direction delays what it reads by d/2.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Delay returns the delay a round trip takes now.
func (p *Proxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// Spikes sets the delay to each of spikes in turn, for length, every
// period, until stop is closed, and leaves it at 0.
func (p *Proxy) Spikes(stop <-chan struct{}, period, length time.Duration, spikes ...time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	defer p.SetDelay(0)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.SetDelay(spikes[i%len(spikes)])
		select {
		case <-stop:
			return
		case <-time.After(length):
		}
		p.SetDelay(0)
	}
}

// Close stops accepting and cuts every open connection.
func (p *Proxy) Close() {
	if p.closed.Swap(true) {
		return
	}
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", p.upstream, time.Second)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// track records an open pair, or closes it when the proxy is closing.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = true, true
	return true
}

// chunk is bytes read, and when they may be written.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies from to to, each chunk half a delay after it was read, in
// order, until either side closes; then it closes both.
func (p *Proxy) pipe(from, to net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			time.Sleep(time.Until(c.due))
			if _, err := to.Write(c.b); err != nil {
				for range q { // drain what the reader still sends
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			q <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(p.Delay() / 2)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
	from.Close()
	to.Close()
	p.mu.Lock()
	delete(p.conns, from)
	delete(p.conns, to)
	p.mu.Unlock()
}
