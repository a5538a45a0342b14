package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports finished runs: a bar with an ETA on a terminal, a plain
// line every few seconds otherwise.
type progress struct {
	total int
	bar   *progressbar.ProgressBar
	w     io.Writer
	start time.Time
	mu    sync.Mutex
	last  time.Time
	every time.Duration
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, total int, label string) *progress {
	p := &progress{total: total, w: w, start: time.Now(), last: time.Now(), every: 5 * time.Second}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// done is called with the number of runs finished so far.
func (p *progress) done(n int) {
	if p.bar != nil {
		_ = p.bar.Set(n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < p.every && n != p.total {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	eta := time.Duration(float64(el) / float64(n) * float64(p.total-n))
	fmt.Fprintf(p.w, "%d/%d runs (%.0f%%), %s elapsed, about %s left\n", n, p.total, 100*float64(n)/float64(p.total),
		el.Round(time.Second), eta.Round(time.Second))
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
