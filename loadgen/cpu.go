package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every Linux that Go runs on.
const clockTick = 10 * time.Millisecond

// CPUTime is the CPU time, user and system, that process pid (all its
// threads) has used, from /proc/PID/stat, to 10 ms.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("CPU time of process %d: unreadable /proc stat", pid)
	}
	f := strings.Fields(s[i+1:]) // from field 3 on
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time of process %d: unreadable /proc stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of process %d: unreadable /proc stat", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// cpuWatch measures the CPU time that named processes use during a load.
type cpuWatch struct {
	pids  map[string]int
	start map[string]time.Duration
}

// startCPU reads the processes' CPU times at the start of a load; "loadgen"
// is this process.
func startCPU(pids map[string]int) (*cpuWatch, error) {
	w := &cpuWatch{pids: map[string]int{"loadgen": os.Getpid()}, start: map[string]time.Duration{}}
	for n, p := range pids {
		w.pids[n] = p
	}
	for n, p := range w.pids {
		t, err := CPUTime(p)
		if err != nil {
			return nil, err
		}
		w.start[n] = t
	}
	return w, nil
}

// used returns each process's CPU time since startCPU.
func (w *cpuWatch) used() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for n, p := range w.pids {
		t, err := CPUTime(p)
		if err != nil {
			return nil, err
		}
		out[n] = t - w.start[n]
	}
	return out, nil
}
