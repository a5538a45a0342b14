package loadgen

import (
	"os"
	"testing"
	"time"
)

// CPUTime reads this process's CPU time, which a busy loop raises.
func TestCPUTime(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
	}
	after, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 20*time.Millisecond {
		t.Fatalf("CPU time rose by %v over a 100 ms busy loop", after-before)
	}
	if _, err := CPUTime(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
