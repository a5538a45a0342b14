package replay

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// RunStore keeps the sorted runs an ordered replay spills past
// Options.OrderBuffer lines. accesslog.TempRuns keeps them in a temporary
// directory; without one (Options.Runs nil) they stay in memory, packed.
type RunStore interface {
	// Create starts a run: w takes its bytes, and open, once w is closed,
	// reads them back from the start.
	Create() (w io.WriteCloser, open func() (io.ReadCloser, error), err error)
	// Close removes every run.
	Close() error
}

// memRuns keeps runs in memory.
type memRuns struct{}

type memRun struct{ bytes.Buffer }

func (*memRun) Close() error { return nil }

func (memRuns) Create() (io.WriteCloser, func() (io.ReadCloser, error), error) {
	r := &memRun{}
	return r, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(r.Bytes())), nil }, nil
}

func (memRuns) Close() error { return nil }

// DefaultOrderBuffer is how many lines Options.OrderBuffer holds by default
// before it spills a sorted run (RunStore): about 300 MB of resident
// memory at its fullest, measured on a CSV log of 100,000 keys.
const DefaultOrderBuffer = 1 << 20

// orderer puts a log's lines in time order (ties in the log's order) in
// bounded memory: it holds up to max lines, and past that merges them and
// writes them out as a run (RunStore); at the end it merges
// the runs and what it still holds. A log of at most max lines never
// spills. Times are the log's own, before Speed and Shift. It holds the
// lines in chunks, each sorted as it fills: growing one slice to a million
// lines would copy it again and again.
type orderer struct {
	max    int
	chunks [][]pendingLine // full chunks, each sorted
	buf    []pendingLine   // the chunk filling
	held   int
	store  RunStore
	runs   []func() (io.ReadCloser, error)
	// the latest time read so far, and the furthest a line came behind it
	started  bool
	latest   int64
	disorder int64
	behind   int64 // lines that came behind a later one
}

// chunkLines is the most lines of one of the orderer's chunks.
const chunkLines = 1 << 16

func newOrderer(max int, store RunStore) *orderer {
	if store == nil {
		store = memRuns{}
	}
	return &orderer{max: max, store: store}
}

// add takes a line as read.
func (o *orderer) add(p pendingLine) error {
	if d := o.latest - p.t; o.started && d > 0 {
		o.behind++
		o.disorder = max(o.disorder, d)
	}
	if !o.started || p.t > o.latest {
		o.latest, o.started = p.t, true
	}
	if len(o.buf) == chunkLines {
		slices.SortFunc(o.buf, byTime)
		o.chunks = append(o.chunks, o.buf)
		o.buf = make([]pendingLine, 0, chunkLines)
	}
	o.buf = append(o.buf, p)
	if o.held++; o.held >= o.max {
		return o.spill()
	}
	return nil
}

func byTime(a, b pendingLine) int {
	if a.t != b.t {
		if a.t < b.t {
			return -1
		}
		return 1
	}
	return a.n - b.n
}

// inMemory returns what the orderer holds as sorted runs, and lets go of it.
func (o *orderer) inMemory() runs {
	slices.SortFunc(o.buf, byTime)
	var h runs
	for _, c := range append(o.chunks, o.buf) {
		if len(c) > 0 {
			h = append(h, &run{head: c[0], mem: c[1:]})
		}
	}
	o.chunks, o.buf, o.held = nil, nil, 0
	return h
}

// spill merges what the orderer holds and writes it out as a run.
func (o *orderer) spill() error {
	f, open, err := o.store.Create()
	if err != nil {
		return fmt.Errorf("ordering the log: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	err = merge(o.inMemory(), func(p pendingLine) error {
		b = appendLine(b[:0], &p)
		_, err := w.Write(b)
		return err
	})
	err = errors.Join(err, w.Flush(), f.Close())
	if err != nil {
		return fmt.Errorf("ordering the log: %w", err)
	}
	o.runs = append(o.runs, open)
	return nil
}

// appendLine encodes a line for a run.
func appendLine(b []byte, p *pendingLine) []byte {
	b = binary.AppendVarint(b, p.t)
	b = binary.AppendUvarint(b, uint64(p.n))
	b = binary.AppendUvarint(b, uint64(p.cost))
	for _, s := range [...]string{p.key, p.gw, p.client} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// run reads a run back, line by line: from a file, or what is left of a
// chunk in memory (mem).
type run struct {
	mem  []pendingLine
	f    io.ReadCloser
	r    *bufio.Reader
	head pendingLine
	buf  []byte
	// names hands out one copy of each recent key and gateway
	names map[string]string
}

func (r *run) next() (bool, error) {
	if r.r == nil {
		if len(r.mem) == 0 {
			return false, nil
		}
		r.head, r.mem = r.mem[0], r.mem[1:]
		return true, nil
	}
	t, err := binary.ReadVarint(r.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var n, cost uint64
	if n, err = binary.ReadUvarint(r.r); err == nil {
		cost, err = binary.ReadUvarint(r.r)
	}
	var s [3]string
	for i := range s {
		if err != nil {
			break
		}
		s[i], err = r.str()
	}
	if err != nil {
		return false, fmt.Errorf("reading back the ordered log: %w", err)
	}
	r.head = pendingLine{t: t, n: int(n), cost: int(cost), key: s[0], gw: s[1], client: s[2]}
	return true, nil
}

func (r *run) str() (string, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil || n == 0 {
		return "", err
	}
	if n > 1<<30 {
		return "", errors.New("a corrupt run")
	}
	r.buf = slices.Grow(r.buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return "", err
	}
	if c, ok := r.names[string(r.buf)]; ok {
		return c, nil
	}
	if len(r.names) >= 1<<16 {
		clear(r.names)
	}
	c := string(r.buf)
	r.names[c] = c
	return c, nil
}

// runs is a heap of runs by their heads.
type runs []*run

func (h runs) Len() int           { return len(h) }
func (h runs) Less(i, j int) bool { return byTime(h[i].head, h[j].head) < 0 }
func (h runs) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runs) Push(x any)        { *h = append(*h, x.(*run)) }
func (h *runs) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// each calls fn with every line in time order, then removes the runs.
func (o *orderer) each(fn func(pendingLine) error) error {
	defer o.close()
	if len(o.runs) == 0 && len(o.chunks) == 0 {
		slices.SortFunc(o.buf, byTime)
		for _, p := range o.buf {
			if err := fn(p); err != nil {
				return err
			}
		}
		return nil
	}
	if len(o.runs) > 0 && o.held > 0 {
		if err := o.spill(); err != nil {
			return err
		}
	}
	h, err := o.open()
	for _, r := range h {
		defer r.f.Close()
	}
	if err != nil {
		return err
	}
	return merge(append(h, o.inMemory()...), fn)
}

// merge calls fn with the lines of the runs h, each at its first line, in
// time order.
func merge(h runs, fn func(pendingLine) error) error {
	heap.Init(&h)
	for h.Len() > 0 {
		r := h[0]
		if err := fn(r.head); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// open opens every run at its first line.
func (o *orderer) open() (runs, error) {
	var h runs
	for _, open := range o.runs {
		f, err := open()
		if err != nil {
			return h, fmt.Errorf("ordering the log: %w", err)
		}
		r := &run{f: f, r: bufio.NewReaderSize(f, 256<<10), names: map[string]string{}}
		h = append(h, r)
		ok, err := r.next()
		if err != nil {
			return h, err
		}
		if !ok {
			h = h[:len(h)-1]
			f.Close()
		}
	}
	return h, nil
}

// close removes the runs.
func (o *orderer) close() {
	if o.runs != nil {
		o.store.Close()
	}
	o.chunks, o.buf, o.runs = nil, nil, nil
}
