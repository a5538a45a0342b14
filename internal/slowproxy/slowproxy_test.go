package slowproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves one line back per line, on loopback, until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A round trip through the proxy takes at least the delay set, and the
// bytes come back whole and in order; with no delay it passes them on.
// (Only lower bounds: a busy machine may add to any of them.)
func TestDelayIsAtLeastWhatIsSet(t *testing.T) {
	p := Start(t, echo(t))
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	trip := func(msg string) time.Duration {
		start := time.Now()
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != msg+"\n" {
			t.Fatalf("echo of %q: %q, %v", msg, got, err)
		}
		return time.Since(start)
	}
	trip("warm")
	p.SetDelay(200 * time.Millisecond)
	if d := trip("slow"); d < 200*time.Millisecond {
		t.Fatalf("a round trip took %v with a delay of 200ms", d)
	}
	p.SetDelay(0)
	for i := range 3 {
		msg := string(rune('a' + i))
		trip(msg)
	}
}

// Bytes read after a spike ends wait behind those read during it.
func TestOrderIsKeptAcrossASpike(t *testing.T) {
	p := Start(t, echo(t))
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.SetDelay(300 * time.Millisecond)
	start := time.Now()
	c.Write([]byte("first\n"))
	time.Sleep(20 * time.Millisecond)
	p.SetDelay(0)
	c.Write([]byte("second\n"))
	r := bufio.NewReader(c)
	for _, want := range []string{"first\n", "second\n"} {
		got, err := r.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q (%v), want %q", got, err, want)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("both answers came after %v: the second overtook the spike", d)
	}
}
