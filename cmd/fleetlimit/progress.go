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
// line every few seconds otherwise. The bar and the estimate follow the
// share of the expected work done, not the runs: their costs differ a
// thousandfold.
type progress struct {
	total int
	label string
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
	p := &progress{total: total, label: label, w: w, start: time.Now(), last: time.Now(), every: 5 * time.Second}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(workSteps,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

// workSteps is the bar's resolution over the expected work.
const workSteps = 1000

// done is called with the number of runs finished so far and the share of
// the expected work they make.
func (p *progress) done(n int, work float64) {
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s %d/%d runs", p.label, n, p.total))
		_ = p.bar.Set(int(work * workSteps))
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
	eta := time.Duration(float64(el) / max(work, 1e-9) * (1 - work))
	fmt.Fprintf(p.w, "%d/%d runs (%.0f%%) of the expected work done, %s elapsed, about %s left\n", n, p.total, 100*work,
		el.Round(time.Second), eta.Round(time.Second))
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// maxWorkers is the most parallel runs --workers takes: past the cores,
// more only cost memory.
const maxWorkers = 1024

// checkWorkers refuses a --workers outside 0 (one per core) to maxWorkers.
func checkWorkers(n int) error {
	if n < 0 || n > maxWorkers {
		return usagef("--workers %d: want 0 (one per core) to %d", n, maxWorkers)
	}
	return nil
}
