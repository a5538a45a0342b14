package sim

// watch is a timeline's view of a run's steps as they happen: its syncs,
// its round trips, and, at the end of each bucket, each gateway's view of
// the key. A run without one (every run but a timeline's) passes nil, and
// each method is then a no-op.
type watch struct {
	bucket int64
	until  int64
	next   int // the next bucket whose end the views are read at
	syncs  []int
	trips  []int
	views  [][]int // views[b][g]; nil when the run cannot show them
	// view reads gateway g's view at the end time at, and whether g is in
	// the fleet then
	view func(g int, at int64) (int, bool)
}

// step is called before any step of the run at t: it reads the gateways'
// views at the end of every bucket that ended at or before t, while their
// state is still that of the steps before. Small enough to inline, so a
// run without a watch pays a nil check.
func (w *watch) step(t int64) {
	if w != nil && w.next < len(w.views) && int64(w.next+1)*w.bucket <= t {
		w.readViews(t)
	}
}

// readViews is step's work.
func (w *watch) readViews(t int64) {
	for w.next < len(w.views) && int64(w.next+1)*w.bucket <= t {
		end := min(int64(w.next+1)*w.bucket, w.until) - 1
		for g := range w.views[w.next] {
			v, ok := w.view(g, end)
			if !ok {
				v = -1
			}
			w.views[w.next][g] = v
		}
		w.next++
	}
}

// finish reads the views of the buckets that end after the run's last
// step.
func (w *watch) finish() {
	if w != nil {
		w.step(int64(len(w.views)) * w.bucket)
	}
}

// synced counts a sync that started at t.
func (w *watch) synced(t int64) {
	if w != nil && t < w.until {
		w.syncs[t/w.bucket]++
	}
}

// asked counts a round trip that started at t.
func (w *watch) asked(t int64) {
	if w != nil && t < w.until {
		w.trips[t/w.bucket]++
	}
}
