package memstore

// rateLeases are Doorman's rate leases on a key (SetRateLeases): each
// gateway's last want and the rate it has, in requests per window.
type rateLeases struct {
	wants, has []float64
	known      []bool
	fair       bool   // FairShare, not ProportionalShare
	version    uint64 // changes with any want or rate (RateVersion)
}

// SetRateLeases makes the key's syncs hand out Doorman's rate leases instead
// of lease slots: a push's Ask is the rate the gateway wants, in requests
// per window, and the pull's Granted the rate it has from now on (rounded
// down), by Doorman's ProportionalShare over the key's limit as the
// capacity (go/server/doorman/algorithm.go), or with fair by its FairShare.
// The rates count nothing in the key's log: a gateway admits within its
// rate on its own.
func (k *Key) SetRateLeases(fair bool) { k.rates = &rateLeases{fair: fair} }

// RateVersion changes whenever a sync changes a gateway's want or rate
// (SetRateLeases; always 0 without): a sync whose gateway wants what it
// wanted, while the version stays, is granted what it was, since a grant
// is a function of every gateway's want and of the others' rates.
func (k *Key) RateVersion() uint64 {
	if k.rates == nil {
		return 0
	}
	return k.rates.version
}

// rateLease assigns gateway gw its rate for wanting w of capacity c, and
// returns it: what it wants when every want fits, or when it wants no more
// than its equal share; otherwise its equal share and a share of what the
// gateways wanting less than theirs leave, in proportion to its want past
// its equal share; never more than the capacity the others do not have.
func (r *rateLeases) rateLease(gw int, c, w float64) float64 {
	for gw >= len(r.wants) {
		r.wants, r.has, r.known = append(r.wants, 0), append(r.has, 0), append(r.known, false)
	}
	if r.wants[gw] != w || !r.known[gw] {
		r.version++
	}
	r.wants[gw], r.known[gw] = w, true
	var count, sumWants, sumHas float64
	for i, ok := range r.known {
		if ok {
			count++
			sumWants += r.wants[i]
			sumHas += r.has[i]
		}
	}
	unused := c - sumHas + r.has[gw]
	equal := c / count
	gets := w
	if r.fair {
		gets = r.fairShare(gw, equal, w)
	} else if sumWants > c && w > equal {
		var extraCap, extraNeed float64
		for i, ok := range r.known {
			switch {
			case !ok:
			case r.wants[i] < equal:
				extraCap += equal - r.wants[i]
			default:
				extraNeed += r.wants[i] - equal
			}
		}
		gets = equal + (w-equal)*(extraCap/extraNeed)
	}
	if h := max(min(gets, unused), 0); h != r.has[gw] {
		r.has[gw] = h
		r.version++
	}
	return r.has[gw]
}

// fairShare is Doorman's FairShare for gateway gw wanting w: what it wants
// up to its equal share; past it, its share of what the gateways wanting
// less than theirs leave, split equally among those wanting more, and a
// second round of what those leave in turn.
func (r *rateLeases) fairShare(gw int, equal, w float64) float64 {
	if w <= equal {
		return w
	}
	extra, wantExtra := 0.0, 1.0
	var more []int
	for i, ok := range r.known {
		switch {
		case !ok || i == gw:
		case r.wants[i] < equal:
			extra += equal - r.wants[i]
		case r.wants[i] > equal:
			wantExtra++
			more = append(more, i)
		}
	}
	deservedExtra := extra / wantExtra
	if w < equal+deservedExtra {
		return w
	}
	extraExtra, wantExtraExtra := 0.0, 1.0
	for _, i := range more {
		switch {
		case r.wants[i] < equal+deservedExtra:
			extraExtra += equal + deservedExtra - r.wants[i]
		case r.wants[i] > equal+deservedExtra:
			wantExtraExtra++
		}
	}
	return equal + deservedExtra + extraExtra/wantExtraExtra
}
