package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/fleetlimit/fleetlimit/sim"
)

// simKeysRun is one seed of a many-keys run in JSON.
type simKeysRun struct {
	Seed         uint64  `json:"seed"`
	Requests     int64   `json:"requests"`
	Admitted     int64   `json:"admitted"`
	Rejected     int64   `json:"rejected"`
	RoundTrips   int64   `json:"round_trips"`
	AdmittedX    float64 `json:"admitted_x"`
	WorstWindowX float64 `json:"worst_window_x"`
	RejectedPct  float64 `json:"rejected_pct"`
	RoundTripPct float64 `json:"round_trip_pct"`
	Store        struct {
		SyncItemsPerSec   float64 `json:"sync_items_per_sec"`
		BatchesPerSec     float64 `json:"batches_per_sec"`
		RoundTripsPerSec  float64 `json:"round_trips_per_sec"`
		PushedPerSync     float64 `json:"stamps_pushed_per_batch"`
		PulledPerSync     float64 `json:"stamps_pulled_per_batch"`
		BytesPushedPerSec float64 `json:"bytes_pushed_per_sec"`
		BytesPulledPerSec float64 `json:"bytes_pulled_per_sec"`
		BytesPushedPerB   float64 `json:"bytes_pushed_per_batch"`
		BytesPulledPerB   float64 `json:"bytes_pulled_per_batch"`
		Entries           int64   `json:"entries_held"`
	} `json:"store"`
}

// simKeys runs n keys through the fleet d for seeds S..S+seeds-1 and prints
// each seed and, in text, their mean.
func simKeys(w io.Writer, d sim.Params, seeds, n int, dist sim.KeyDist, workers int, asJSON bool) error {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	res := make([]sim.KeysResult, seeds)
	errs := make([]error, seeds)
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := d
			p.Seed = d.Seed + uint64(i)
			res[i], errs[i] = sim.RunKeys(p, n, dist)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return runError{err}
		}
	}
	runs := make([]simKeysRun, seeds)
	for i, r := range res {
		x := simKeysRun{Seed: r.Params.Seed, Requests: r.Requests, Admitted: r.Admitted, Rejected: r.Rejected, RoundTrips: r.RoundTrips,
			AdmittedX: r.AdmittedX, WorstWindowX: r.WorstWindowX, RejectedPct: r.RejectedPct, RoundTripPct: r.RoundTripPct}
		s := r.Store
		x.Store.SyncItemsPerSec, x.Store.BatchesPerSec, x.Store.RoundTripsPerSec = s.SyncItemsPerSec, s.BatchesPerSec, s.RoundTripsPerSec
		x.Store.PushedPerSync, x.Store.PulledPerSync = s.PushedPerSync, s.PulledPerSync
		x.Store.BytesPushedPerSec, x.Store.BytesPulledPerSec, x.Store.Entries = s.BytesPushedPerSec, s.BytesPulledPerSec, s.Entries
		if s.BatchesPerSec > 0 {
			x.Store.BytesPushedPerB, x.Store.BytesPulledPerB = s.BytesPushedPerSec/s.BatchesPerSec, s.BytesPulledPerSec/s.BatchesPerSec
		}
		runs[i] = x
	}
	if asJSON {
		doc := struct {
			Design   string       `json:"design"`
			Gateways int          `json:"gateways"`
			Sync     string       `json:"sync"`
			Limit    int          `json:"limit"`
			Window   string       `json:"window"`
			Traffic  string       `json:"traffic"`
			Routing  string       `json:"routing"`
			Duration string       `json:"duration"`
			Keys     int          `json:"keys"`
			KeyDist  string       `json:"key_dist"`
			Runs     []simKeysRun `json:"runs"`
		}{d.Design, d.Gateways, d.Sync.String(), d.Limit, d.Window.String(), d.MixString(), d.Routing.String(), d.Duration.String(),
			n, dist.String(), runs}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return runError{err}
		}
		return nil
	}
	fmt.Fprintf(w, "%s: K=%d Δ=%v L=%d per %v, %d keys (%s), %s each on average, %v, %d seed(s)\n",
		d.Design, d.Gateways, d.Sync, d.Limit, d.Window, n, dist, d.MixString(), d.Duration, seeds)
	for _, r := range runs {
		s := r.Store

		fmt.Fprintf(w, "seed %d: admitted_x %.3f  worst_window_x %.3f  rejected %.2f%%  round trips %.2f%%\n",
			r.Seed, r.AdmittedX, r.WorstWindowX, r.RejectedPct, r.RoundTripPct)
		fmt.Fprintf(w, "  store: %.1f key syncs/s in %.1f batches/s, %.1f round trips/s; per batch %.1f stamps (%.0f B) pushed, %.1f (%.0f B) pulled; "+
			"%.0f B/s pushed, %.0f B/s pulled; %d entries held at most\n",
			s.SyncItemsPerSec, s.BatchesPerSec, s.RoundTripsPerSec, s.PushedPerSync, s.BytesPushedPerB, s.PulledPerSync, s.BytesPulledPerB,
			s.BytesPushedPerSec, s.BytesPulledPerSec, s.Entries)
	}
	return nil
}
