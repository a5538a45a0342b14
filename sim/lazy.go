package sim

import (
	"math"

	"github.com/fleetlimit/fleetlimit/design"
)

// never is a time after every run.
const never = math.MaxInt64

// arrival is a request known ahead of its turn.
type arrival struct {
	t int64
	g int
}

// lazySched is the lazy mode's bookkeeping for one gateway.
type lazySched struct {
	next int64   // index of its next sync not yet performed or skipped
	due  int64   // time of the next sync that must be performed
	need []int64 // PullsView: times of the last sync before each known arrival, ascending
	rank int     // position in the sync order, for ties
	slot int     // position in the heap
}

// lazy performs only the syncs that change something: those a design does
// not declare quiet, and, for designs whose view comes from the last pull,
// the last sync before each of the gateway's decisions. To know those in
// time it reads the arrivals at least Δ ahead. It makes exactly the eager
// mode's decisions.
func (r *runner) lazy() {
	k := len(r.gws)
	lz := make([]design.Lazy, k)
	sc := make([]lazySched, k)
	pulls := r.gws[0].(design.Lazy).PullsView()
	h := &syncHeap{sc: sc}
	for rank, i := range r.order {
		lz[i] = r.gws[i].(design.Lazy)
		sc[i].rank = rank
		sc[i].due = never
		h.push(i)
	}
	at := func(i int, n int64) int64 { return r.phase[i] + n*r.delta }
	// lastBefore is the index of gateway i's last sync at or before t, or -1.
	lastBefore := func(i int, t int64) int64 {
		if t < r.phase[i] {
			return -1
		}
		return (t - r.phase[i]) / r.delta
	}
	reschedule := func(i int) {
		s := &sc[i]
		due := int64(never)
		if q := lz[i].QuietSyncs(); q != design.Forever {
			if n := s.next + int64(q); n < (r.end-r.phase[i])/r.delta+1 {
				due = at(i, n)
			}
		}
		if len(s.need) > 0 && s.need[0] < due {
			due = s.need[0]
		}
		s.due = due
		h.fix(i)
	}
	// catchUp skips gateway i's quiet syncs before index n.
	catchUp := func(i int, n int64) {
		if skip := n - sc[i].next; skip > 0 {
			lz[i].Skip(int(skip))
			sc[i].next = n
		}
	}
	for i := range r.gws {
		reschedule(i)
	}

	var buf []arrival // arrivals known ahead, a queue
	head := 0
	genT := int64(-1) // time of the last arrival generated
	done := false
	generate := func() {
		t := r.src.next()
		if t >= r.end {
			done = true
			return
		}
		genT = t
		g := r.route.pick()
		buf = append(buf, arrival{t, g})
		if pulls {
			if n := lastBefore(g, t); n >= 0 {
				s := &sc[g]
				need := at(g, n)
				if len(s.need) == 0 || need > s.need[len(s.need)-1] {
					s.need = append(s.need, need)
					if need < s.due {
						s.due = need
						h.fix(g)
					}
				}
			}
		}
	}
	syncUpTo := func(t int64) {
		for {
			g := h.top()
			s := &sc[g]
			if s.due > t {
				return
			}
			n := lastBefore(g, s.due)
			catchUp(g, n)
			r.m.syncOne(s.due, r.gws[g], r.key)
			s.next = n + 1
			for len(s.need) > 0 && s.need[0] <= s.due {
				s.need = s.need[1:]
			}
			reschedule(g)
		}
	}

	for {
		if head == len(buf) {
			if head > 0 {
				buf, head = buf[:0], 0
			}
			if done {
				break
			}
			generate()
			if done {
				break
			}
		}
		front := buf[head]
		for !done && genT <= front.t+r.delta {
			generate()
		}
		syncUpTo(front.t)
		head++
		if head > 4096 && head*2 > len(buf) {
			n := copy(buf, buf[head:])
			buf, head = buf[:n], 0
		}
		g := front.g
		catchUp(g, lastBefore(g, front.t)+1)
		r.decide(front.t, g)
		reschedule(g)
	}
	syncUpTo(r.end - 1)
}

// syncHeap orders gateways by their due sync, ties by sync order.
type syncHeap struct {
	sc   []lazySched
	heap []int
}

func (h *syncHeap) less(a, b int) bool {
	x, y := &h.sc[h.heap[a]], &h.sc[h.heap[b]]
	return x.due < y.due || x.due == y.due && x.rank < y.rank
}

func (h *syncHeap) swap(a, b int) {
	h.heap[a], h.heap[b] = h.heap[b], h.heap[a]
	h.sc[h.heap[a]].slot = a
	h.sc[h.heap[b]].slot = b
}

func (h *syncHeap) push(i int) {
	h.heap = append(h.heap, i)
	h.sc[i].slot = len(h.heap) - 1
	h.up(len(h.heap) - 1)
}

func (h *syncHeap) top() int { return h.heap[0] }

func (h *syncHeap) fix(i int) {
	j := h.sc[i].slot
	if !h.down(j) {
		h.up(j)
	}
}

func (h *syncHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(j, p) {
			return
		}
		h.swap(j, p)
		j = p
	}
}

func (h *syncHeap) down(j int) bool {
	start := j
	n := len(h.heap)
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if rr := l + 1; rr < n && h.less(rr, l) {
			m = rr
		}
		if !h.less(m, j) {
			break
		}
		h.swap(j, m)
		j = m
	}
	return j > start
}
