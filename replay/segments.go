package replay

import "github.com/fleetlimit/fleetlimit/sim/catalog"

// segment is one key's requests gathered since it was last run, taken from
// its keyState.
type segment struct {
	key  string
	lim  Limit
	t    []int64
	g, n []uint16
}

// worker runs segments; each has its own scratch and outcomes of lone
// requests, so workers share nothing but the options.
type worker struct {
	opt     *Options
	designs []string
	rel     []int64
	exact   []bool
	lone    map[loneKey]loneOutcome
	// a lone segment's sync phases and scheduled syncs, and the designs
	// that never sync
	phase     []int64
	loneSyncs int64
	noSync    map[string]bool
}

// The most segments, and requests, of one batch.
const (
	batchSegments = 4096
	batchRequests = 1 << 18
)

// segments runs the segments in batches, each by Options.Parallel (one
// after another without it), and folds each batch's results into the
// report in the order the segments came: the report does not depend on
// the number of workers.
type segments struct {
	e       *engine
	workers []*worker
	fill    []segment
	reqs    int
}

func newSegments(e *engine) *segments {
	s := &segments{e: e}
	n := 1
	if e.opt.Parallel != nil {
		n = e.opt.Workers
	}
	for range n {
		w := &worker{opt: &e.opt, designs: e.rep.Designs, lone: map[loneKey]loneOutcome{}, noSync: map[string]bool{}}
		for _, d := range w.designs {
			info, _ := catalog.Lookup(d)
			w.noSync[d] = info.NoSync
		}
		s.workers = append(s.workers, w)
	}
	return s
}

// add takes a segment to run.
func (s *segments) add(sg segment) error {
	s.fill = append(s.fill, sg)
	if s.reqs += len(sg.t); len(s.fill) < batchSegments && s.reqs < batchRequests {
		return nil
	}
	return s.flush()
}

// flush runs the segments gathered, and folds their results in order; the
// first error stops it.
func (s *segments) flush() error {
	segs := s.fill
	if len(segs) == 0 {
		return nil
	}
	s.fill, s.reqs = nil, 0
	nd := len(s.e.rep.Designs)
	res, figs, errs := make([]KeyResult, len(segs)), make([]Figures, nd*len(segs)), make([]error, len(segs))
	run := func(w, i int) {
		res[i], errs[i] = s.workers[w].runSegment(&segs[i], figs[i*nd:(i+1)*nd])
	}
	if p := s.e.opt.Parallel; p != nil && len(s.workers) > 1 {
		p(len(segs), run)
	} else {
		for i := range segs {
			run(0, i)
		}
	}
	for i := range res {
		if errs[i] != nil {
			return errs[i]
		}
		s.e.fold(res[i], figs[i*nd:(i+1)*nd])
	}
	return nil
}
