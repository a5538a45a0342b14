package design

import "github.com/fleetlimit/fleetlimit/store"

// Multi is one gateway's state for a key with several limits (10 a second
// and 250 a day, say): one Gateway per limit, each counting on a store key
// of its own (store.Key.Part), run together so that a request is admitted
// only if every limit admits it and counted against them only when it is.
//
// A decision is Decide, then, when it returns Ask, the queries of Queries
// sent to the store together in one round trip (store.MultiAsker, whose
// central checks admit all or none) and Resume with their answers, or
// Abandon when they never came back; Fallback while the store cannot be
// reached. When one limit refuses a request that others admitted, their
// admits are taken back (Gateway.Unadmit). A Multi is not safe for
// concurrent use.
type Multi struct {
	Parts   []Gateway
	v       []Verdict
	q       []store.Query
	refused int
}

// NewMulti runs parts, one per limit, as one key's gateway.
func NewMulti(parts []Gateway) *Multi {
	return &Multi{Parts: parts, v: make([]Verdict, len(parts)), q: make([]store.Query, len(parts)), refused: -1}
}

// Decide runs a request of cost n at now through every limit: Admit when
// each admits it alone, Reject as soon as one refuses it (taking back what
// the others did), Ask when some must ask the store.
func (m *Multi) Decide(now int64, n int) Verdict {
	m.refused = -1
	asks := false
	for i, g := range m.Parts {
		v, q := g.Decide(now, n)
		m.v[i], m.q[i] = v, q
		switch v {
		case Reject:
			m.refuse(now, n, i, i)
			return Reject
		case Ask:
			asks = true
		}
	}
	if asks {
		return Ask
	}
	return Admit
}

// Queries returns, after Decide said Ask, each limit's query: the zero Query
// for a limit that decided alone. The slice is the Multi's, valid until the
// next call.
func (m *Multi) Queries() []store.Query { return m.q }

// Resume finishes a decision with the store's answers, one per limit
// (those of limits that did not ask are ignored).
func (m *Multi) Resume(now int64, n int, as []store.Answer) Verdict {
	for i, g := range m.Parts {
		if m.v[i] == Ask {
			m.v[i] = g.Resume(now, n, m.q[i], as[i])
		}
	}
	return m.settle(now, n, false)
}

// settle ends a decision whose limits have all decided: Admit if every one
// admitted, else Reject, taking back what the others did. A store that
// answers central checks all or none refuses them all when one is full: the
// limit said to refuse is the one with the least left.
func (m *Multi) settle(now int64, n int, fallback bool) Verdict {
	first, least := -1, 0
	for i, g := range m.Parts {
		if m.v[i] != Reject {
			continue
		}
		rem, _ := g.View(now, fallback)
		if first < 0 || rem < least {
			first, least = i, rem
		}
	}
	if first < 0 {
		return Admit
	}
	m.refuse(now, n, first, len(m.Parts))
	return Reject
}

// Abandon ends a decision whose answers never came back: each limit that
// asked takes back what its query may have done and, when fallback is set,
// decides by its fallback; the request is admitted only if every limit
// admits it.
func (m *Multi) Abandon(now int64, n int, fallback bool) Verdict {
	for i, g := range m.Parts {
		if m.v[i] == Ask {
			m.v[i] = g.Abandon(now, n, m.q[i], fallback)
			m.q[i] = store.Query{} // an admit now is the fallback's, local
		}
	}
	return m.settle(now, n, true)
}

// Fallback decides a request alone, by every limit's fallback, while the
// store cannot be reached.
func (m *Multi) Fallback(now int64, n int) Verdict {
	m.refused = -1
	for i, g := range m.Parts {
		m.v[i], m.q[i] = g.Fallback(now, n), store.Query{}
		if m.v[i] == Reject {
			m.refuse(now, n, i, i)
			return Reject
		}
	}
	return Admit
}

// refuse records that limit i refused the request, and takes back what the
// limits before end did for it: admits are undone, queries not sent
// abandoned.
func (m *Multi) refuse(now int64, n, i, end int) {
	m.refused = i
	for j := range end {
		switch m.v[j] {
		case Admit:
			m.Parts[j].Unadmit(now, n, m.q[j])
		case Ask:
			m.Parts[j].Abandon(now, n, m.q[j], false)
		}
	}
}

// Refused returns the limit that refused the last rejected request, -1
// after an admit.
func (m *Multi) Refused() int { return m.refused }

// Binding returns the limit that binds at now: the one that refused the
// last request if it was rejected, else the one with the least left (the
// first of them), with what it has left and when its view next frees
// budget (Gateway.View).
func (m *Multi) Binding(now int64, fallback bool) (limit, remaining int, reset int64) {
	limit = -1
	for i, g := range m.Parts {
		rem, rs := g.View(now, fallback)
		if i == m.refused || (m.refused < 0 && (limit < 0 || rem < remaining)) {
			limit, remaining, reset = i, rem, rs
		}
	}
	return limit, remaining, reset
}
