package sim

import (
	"fmt"

	"math"
	"strconv"
	"strings"

	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// KeyDist says how requests pick their key among N.
type KeyDist struct {
	// Zipf is S of zipf:S, key i (from 1) with probability ∝ 1/i^S; 0 is
	// uniform.
	Zipf float64
}

// MaxKeys bounds --keys: each key is a run of its own.
const MaxKeys = 100_000

// ParseKeyDist parses "uniform" or "zipf:S" (0 < S <= 10).
func ParseKeyDist(s string) (KeyDist, error) {
	if s == "uniform" {
		return KeyDist{}, nil
	}
	v, ok := strings.CutPrefix(s, "zipf:")
	if !ok {
		return KeyDist{}, fmt.Errorf("key distribution %q: want uniform or zipf:S", s)
	}
	z, err := strconv.ParseFloat(v, 64)
	if err != nil || !(z > 0 && z <= 10) {
		return KeyDist{}, fmt.Errorf("key distribution %q: S must be a number in (0, 10]", s)
	}
	return KeyDist{Zipf: z}, nil
}

// String returns "uniform" or "zipf:S".
func (d KeyDist) String() string {
	if d.Zipf == 0 {
		return "uniform"
	}
	return "zipf:" + strconv.FormatFloat(d.Zipf, 'g', -1, 64)
}

// Weights returns each of n keys' share of the requests, summing to 1.
func (d KeyDist) Weights(n int) []float64 {
	w := make([]float64, n)
	var sum float64
	for i := range w {
		w[i] = 1
		if d.Zipf > 0 {
			w[i] = math.Pow(float64(i+1), -d.Zipf)
		}
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// KeysResult is one run of N keys through one fleet.
type KeysResult struct {
	Params Params // the traffic is the whole key set's, per key on average
	Keys   int
	Dist   KeyDist

	Requests, Admitted, Rejected, RoundTrips int64

	AdmittedX    float64 // admitted per window over all keys, in units of N × L
	WorstWindowX float64 // the worst window of any key, in units of L
	RejectedPct  float64
	RoundTripPct float64

	Store KeysStore
}

// KeysStore is what the store carried for all keys, per second of the run
// and per sync.
type KeysStore struct {
	SyncItemsPerSec   float64 // key syncs (one item of a gateway's batch each)
	BatchesPerSec     float64 // gateway sync batches, K/Δ
	RoundTripsPerSec  float64
	PushedPerSync     float64 // stamps pushed per gateway batch
	PulledPerSync     float64 // expiring stamps pulled per gateway batch
	BytesPushedPerSec float64 // at StampBytes per stamp and ItemBytes per item
	BytesPulledPerSec float64
	Entries           int64 // the most entries each key held, summed over keys
}

// The payload sizes the byte figures assume: a stamp and its count as two
// 8-byte integers, and a key's item (name aside) as four.
const (
	StampBytes = 16
	ItemBytes  = 32
)

// RunKeys runs n keys through the fleet p describes, each request picking
// its key by d. A fleet's keys share nothing but the gateways, so key i is
// a run of its own whose traffic is p's scaled by n × its weight (a
// Poisson stream split at random is independent Poisson streams) and whose
// seed is p.Seed's i-th: the result is reproducible from p, n and d. Every
// sync is performed, as the live limiter does for a key whose view comes
// from the pull; for the others it leaves quiet keys out, so the sync items
// here are an upper bound for them.
func RunKeys(p Params, n int, d KeyDist) (KeysResult, error) {
	if err := ValidateKeys(p, n); err != nil {
		return KeysResult{}, err
	}
	res := KeysResult{Params: p, Keys: n, Dist: d}
	var admittedX float64
	for i, w := range d.Weights(n) {
		q := p
		q.Seed = p.Seed*uint64(MaxKeys) + uint64(i)
		q.Traffic = scaled(p.Traffic, w*float64(n))
		q.Also = make([]Traffic, len(p.Also))
		for j, t := range p.Also {
			q.Also[j] = scaled(t, w*float64(n))
		}
		r, _, err := run(q, nil, modeEager)
		if err != nil {
			return KeysResult{}, fmt.Errorf("key %d: %w", i+1, err)
		}
		res.Requests += r.Requests
		res.Admitted += r.Admitted
		res.Rejected += r.Rejected
		res.RoundTrips += r.RoundTrips
		admittedX += r.AdmittedX / float64(n)
		res.WorstWindowX = max(res.WorstWindowX, r.WorstWindowX)
		res.Store.SyncItemsPerSec += float64(r.Syncs)
		res.Store.PushedPerSync += float64(r.Store.PushedStamps)
		res.Store.PulledPerSync += float64(r.Store.PulledStamps)
		res.Store.Entries += r.Store.PeakEntries
	}
	res.AdmittedX = admittedX
	if res.Requests > 0 {
		res.RejectedPct = 100 * float64(res.Rejected) / float64(res.Requests)
		res.RoundTripPct = 100 * float64(res.RoundTrips) / float64(res.Requests)
	}
	secs := p.Duration.Seconds()
	st := &res.Store
	batches := float64(p.Gateways) * secs / p.Sync.Seconds()
	if info, err := catalog.Lookup(p.Design); err == nil && info.NoSync {
		batches = 0 // the simulator has no fallback: nothing to sync
	}
	st.BytesPushedPerSec = (st.PushedPerSync*StampBytes + st.SyncItemsPerSec*ItemBytes) / secs
	st.BytesPulledPerSec = (st.PulledPerSync*StampBytes + st.SyncItemsPerSec*ItemBytes) / secs
	if batches > 0 {
		st.PushedPerSync /= batches
		st.PulledPerSync /= batches
	}
	st.SyncItemsPerSec /= secs
	st.BatchesPerSec = batches / secs
	st.RoundTripsPerSec = float64(res.RoundTrips) / secs
	return res, nil
}

// ValidateKeys reports what is wrong with running n keys of p: p itself,
// n out of range, or more requests or key syncs than a run allows.
func ValidateKeys(p Params, n int) error {
	if n < 1 || n > MaxKeys {
		return fmt.Errorf("keys %d: must be between 1 and %d", n, MaxKeys)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if len(p.Limits) > 0 {
		return fmt.Errorf("several limits: a run of many keys takes one limit per key")
	}
	if reqs := float64(n) * p.expected(); reqs > MaxRequests {
		return fmt.Errorf("%d keys of %s for %v make about %.3g requests: more than the %.0g a run allows", n, p.MixString(), p.Duration, reqs, float64(MaxRequests))
	}
	if syncs := float64(n) * float64(p.Gateways) * float64(p.Duration) / float64(p.Sync); syncs > MaxSyncs {
		return fmt.Errorf("%d keys at %d gateways syncing every %v for %v make %.3g key syncs: more than the %.0g a run allows", n, p.Gateways, p.Sync, p.Duration, syncs, float64(MaxSyncs))
	}
	return nil
}

// scaled is t at f times its rate.
func scaled(t Traffic, f float64) Traffic {
	t.Factor *= f
	return t
}
