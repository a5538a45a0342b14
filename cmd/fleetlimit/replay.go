package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetlimit/fleetlimit/accesslog"
	"github.com/fleetlimit/fleetlimit/replay"
	"github.com/fleetlimit/fleetlimit/rls"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
	"github.com/fleetlimit/fleetlimit/window"
)

// replayFlags are replay's flags.
type replayFlags struct {
	format, key, timeField, gateway string
	routing, designs, kind          string
	config, domain, descriptorKey   string
	csvOut                          string
	gateways, limit, maxBad, top    int
	sync, window, shift, horizon    time.Duration
	speed                           float64
	seed                            uint64
	asJSON                          bool
}

func newReplayCmd() *cobra.Command {
	var rf replayFlags
	c := &cobra.Command{
		Use:   "replay LOG",
		Short: "Run an access log through every design",
		Long: `replay runs a real access log through every design: each request at the time
the log gives, at the gateway it names (--gateway-field) or routed as the
simulator routes, decided by each design with K gateways syncing every Δ and
by the exact limit (central-log, which decides by the store's log). For each
design it prints the requests it admitted that the exact limit would have
refused (false admits) and the reverse (false rejects), its worst window
against the limit, its round trips and its store calls, and the keys it
treated most unlike the exact limit.

Formats (--format): csv (time,key[,gateway][,cost], time as RFC 3339 or
seconds since 1970), common and combined (Apache, nginx's default), json (one
object a line: --time-field and the key's fields by name) and envoy (Envoy's
default text format). A .gz log is read as it is. Lines that cannot be read
are counted and the first few shown with their numbers; --max-bad N stops at
the Nth. Lines up to --horizon out of order are put in their place; a line
further back is left out and counted, never moved.

The key (--key): ip, user, method, path, path:N (its first N segments),
header:NAME (combined: Referer, User-Agent; envoy: X-Forwarded-For,
User-Agent, X-Request-Id, Authority), field:NAME and prefix:FIELD:N (json),
key (csv); several joined by +. The limit is --limit per --window for every
key, or a serve configuration's (--config, --domain, --descriptor-key): each
key is matched as serve would match the descriptor {DESCRIPTOR_KEY: key};
a key no limit matches is left out.

Each key runs apart, gathered until it has been idle for two windows (the
live limiter evicts such a key), so memory follows the keys active at once,
not the log's length.`,
		Example: `  fleetlimit replay access.log.gz --format combined --key ip --limit 100 --window 1m
  fleetlimit replay envoy.log --format envoy --gateway-field upstream-host --gateways 4
  fleetlimit replay api.jsonl --format json --key field:http_x_api_key --config limits.yaml --domain api --descriptor-key api_key
  fleetlimit replay requests.csv --format csv --designs headroom,shared-counter --speed 10 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rf.run(cmd, args[0])
		},
	}
	rf.register(c.Flags())
	return c
}

func (rf *replayFlags) register(f *pflag.FlagSet) {
	f.StringVar(&rf.format, "format", "", "the log's format: csv, common, combined, json or envoy (required)")
	f.StringVar(&rf.key, "key", "", "what a line's key is (see above); default ip, or key for csv")
	f.StringVar(&rf.timeField, "time-field", "time", "json: the time field (RFC 3339, the Common Log Format's time, or seconds since 1970)")
	f.StringVar(&rf.gateway, "gateway-field", "", "the field naming the gateway that served a line (json: a field; envoy: upstream-host; csv: column); routes by it")
	f.StringVar(&rf.routing, "routing", "", "even, uneven, sticky-key, sticky-client or log; default log with --gateway-field, else even")
	f.StringVar(&rf.designs, "designs", "", "designs to run, comma-separated; default every design that takes the window")
	f.IntVar(&rf.gateways, "gateways", 8, "K, the gateways (with --gateway-field: at least as many as the log names)")
	f.DurationVar(&rf.sync, "sync", time.Second, "Δ, each gateway's sync interval")
	f.IntVar(&rf.limit, "limit", 100, "L, requests per window per key")
	f.DurationVar(&rf.window, "window", time.Minute, "W, the window")
	f.StringVar(&rf.kind, "window-kind", "sliding", "sliding or fixed")
	f.StringVar(&rf.config, "config", "", "take each key's limit from this serve configuration")
	f.StringVar(&rf.domain, "domain", "", "with --config: the domain")
	f.StringVar(&rf.descriptorKey, "descriptor-key", "", "with --config: the descriptor key whose value is the line's key")
	f.Float64Var(&rf.speed, "speed", 1, "replay the log this many times faster (0.5: twice as slow)")
	f.DurationVar(&rf.shift, "shift", 0, "move every time by this much")
	f.DurationVar(&rf.horizon, "horizon", 2*time.Second, "how far back a line may come and still be put in its place")
	f.Uint64Var(&rf.seed, "seed", 1, "seed of the routing and the sync phases")
	f.IntVar(&rf.maxBad, "max-bad", 0, "stop at the Nth unreadable line (0: never)")
	f.IntVar(&rf.top, "top", 5, "keys named per design")
	f.BoolVar(&rf.asJSON, "json", false, "print one JSON object")
	f.StringVar(&rf.csvOut, "csv", "", "write every key's figures, design by design, to this CSV file")
}

// options turns the flags into the reader's and the replay's options.
func (rf *replayFlags) options() (accesslog.Options, replay.Options, error) {
	var lo accesslog.Options
	var err error
	if rf.format == "" {
		return lo, replay.Options{}, usagef("--format is required: csv, common, combined, json or envoy")
	}
	if lo.Format, err = accesslog.ParseFormat(rf.format); err != nil {
		return lo, replay.Options{}, usageError{err}
	}
	if rf.key != "" {
		if lo.Key, err = accesslog.ParseKey(rf.key); err != nil {
			return lo, replay.Options{}, usageError{err}
		}
	}
	lo.TimeField, lo.Gateway, lo.MaxBad = rf.timeField, rf.gateway, rf.maxBad
	ro := replay.Options{Gateways: rf.gateways, Sync: rf.sync, Limit: replay.Limit{Requests: rf.limit, Window: rf.window},
		Speed: rf.speed, Shift: rf.shift, Horizon: rf.horizon, Seed: rf.seed, Top: rf.top}
	if rf.maxBad < 0 || rf.top < 0 {
		return lo, ro, usagef("--max-bad and --top want 0 or more")
	}
	if rf.horizon == 0 {
		ro.Horizon = time.Nanosecond // 0 asks for the default: keep none back
	}
	if ro.WindowKind, err = window.ParseKind(rf.kind); err != nil {
		return lo, ro, usageError{err}
	}
	if err := rf.routingOf(&lo, &ro); err != nil {
		return lo, ro, err
	}
	if ro.Designs, err = rf.designList(ro.WindowKind); err != nil {
		return lo, ro, err
	}
	if rf.config != "" || rf.domain != "" || rf.descriptorKey != "" {
		if ro.LimitOf, err = rf.limitOf(); err != nil {
			return lo, ro, err
		}
	}
	return lo, ro, nil
}

// routingOf sets the routing: log when the log names gateways.
func (rf *replayFlags) routingOf(lo *accesslog.Options, ro *replay.Options) error {
	name := rf.routing
	if name == "" {
		name = "even"
		if rf.gateway != "" {
			name = "log"
		}
	}
	var err error
	if ro.Routing, err = replay.ParseRouting(name); err != nil {
		return usageError{err}
	}
	switch {
	case ro.Routing == replay.FromLog && rf.gateway == "":
		return usagef("--routing log: give --gateway-field, the field naming each line's gateway")
	case ro.Routing != replay.FromLog && rf.gateway != "":
		return usagef("--gateway-field routes by the log: leave --routing out, or give log")
	}
	lo.Client = ro.Routing == replay.StickyClient
	return nil
}

// designList is --designs, or every design that takes the window kind.
func (rf *replayFlags) designList(kind window.Kind) ([]string, error) {
	if rf.designs == "" {
		if kind == window.Fixed {
			return catalog.Names(), nil
		}
		return catalog.Sliding(), nil
	}
	var out []string
	for _, d := range strings.Split(rf.designs, ",") {
		if _, err := catalog.Lookup(strings.TrimSpace(d)); err != nil {
			return nil, usageError{err}
		}
		out = append(out, strings.TrimSpace(d))
	}
	return out, nil
}

// limitOf is each key's limit from a serve configuration.
func (rf *replayFlags) limitOf() (func(string) (replay.Limit, bool), error) {
	if rf.config == "" || rf.domain == "" || rf.descriptorKey == "" {
		return nil, usagef("--config, --domain and --descriptor-key go together: the file, its domain, and the descriptor key whose value is the line's key")
	}
	cfg, err := rls.Load(rf.config)
	if err != nil {
		return nil, usageError{err}
	}
	if !slices.Contains(cfg.Domains(), rf.domain) {
		return nil, usagef("--domain %q: %s configures %v", rf.domain, rf.config, cfg.Domains())
	}
	return func(key string) (replay.Limit, bool) {
		l := cfg.Lookup(rf.domain, []rls.Entry{{Key: rf.descriptorKey, Value: key}})
		if l == nil || l.Unlimited || l.RequestsPerUnit == 0 || len(l.Also) > 0 {
			return replay.Limit{}, false
		}
		return replay.Limit{Requests: int(l.RequestsPerUnit), Window: l.Window()}, true
	}, nil
}

// run replays path.
func (rf *replayFlags) run(cmd *cobra.Command, path string) error {
	lo, ro, err := rf.options()
	if err != nil {
		return err
	}
	r, size, closeFn, err := accesslog.Open(path, lo)
	if err != nil {
		return usageError{err}
	}
	defer closeFn()
	var csvW *csv.Writer
	if rf.csvOut != "" {
		f, err := os.Create(rf.csvOut)
		if err != nil {
			return runError{err}
		}
		defer f.Close()
		csvW = csv.NewWriter(f)
		csvW.Write([]string{"key", "limit", "window", "start", "end", "design", "requests", "admitted", "false_admits", "false_rejects", "worst_window_x", "round_trips", "key_syncs"})
		ro.OnKey = func(k replay.KeyResult) { writeKeyRows(csvW, k) }
	}
	bar := newReplayProgress(cmd.ErrOrStderr(), size)
	ro.Progress = func(lines int) { bar.set(r.Read(), lines) }
	start := time.Now()
	rep, err := replay.Run(r, ro)
	bar.finish()
	if err != nil {
		return runError{fmt.Errorf("%s: %w", path, err)}
	}
	if csvW != nil {
		csvW.Flush()
		if err := csvW.Error(); err != nil {
			return runError{err}
		}
	}
	w := cmd.OutOrStdout()
	if rf.asJSON {
		return writeReplayJSON(w, rep, ro)
	}
	writeReplayText(w, path, rep, ro, time.Since(start))
	return nil
}

// writeKeyRows writes a key segment's figures, one row a design.
func writeKeyRows(w *csv.Writer, k replay.KeyResult) {
	names := make([]string, 0, len(k.Designs))
	for d := range k.Designs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		f := k.Designs[d]
		w.Write([]string{k.Key, strconv.Itoa(k.Limit.Requests), k.Limit.Window.String(),
			time.Unix(0, k.Start).UTC().Format(time.RFC3339Nano), time.Unix(0, k.End).UTC().Format(time.RFC3339Nano), d,
			strconv.FormatInt(f.Requests, 10), strconv.FormatInt(f.Admitted, 10), strconv.FormatInt(f.FalseAdmit, 10),
			strconv.FormatInt(f.FalseRefus, 10), strconv.FormatFloat(f.WorstWindowX, 'g', -1, 64),
			strconv.FormatInt(f.RoundTrips, 10), strconv.FormatInt(f.KeySyncs, 10)})
	}
}

func writeReplayText(w io.Writer, path string, rep replay.Report, ro replay.Options, took time.Duration) {
	fmt.Fprintf(w, "fleetlimit replay %s: %d lines, %d requests of %d keys over %v, K = %d (%v routing), Δ = %v, %s\n\n",
		path, rep.Lines, rep.Requests, rep.Keys, rep.Duration().Round(time.Second), rep.Gateways, ro.Routing, ro.Sync, limitText(ro))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tadmitted\tfalse admits\tfalse rejects\tworst_window_x\tround trips\tround trips/s\tkey syncs/s\t")
	for _, d := range rep.Designs {
		f := rep.Figures[d]
		fmt.Fprintf(tw, "%s\t%d\t%d (%.2f%%)\t%d (%.2f%%)\t%.3f\t%.2f%%\t%.1f\t%.1f\t\n", d, f.Admitted, f.FalseAdmit, pct(f.FalseAdmit, f.Requests),
			f.FalseRefus, pct(f.FalseRefus, f.Requests), f.WorstWindowX, pct(f.RoundTrips, f.Requests), rep.PerSec(f.RoundTrips), rep.PerSec(f.KeySyncs))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nfalse admits: admitted where the exact limit (central-log) refused; false rejects: the reverse; worst_window_x: the most one key")
	fmt.Fprintln(w, "admitted in one window, over its limit; round trips: decisions that waited on the store; key syncs: items of the gateways'")
	fmt.Fprintf(w, "batched syncs, every Δ for each key a gateway holds (the batches themselves: K/Δ = %.0f a second)\n", float64(rep.Gateways)/ro.Sync.Seconds())
	for _, d := range rep.Designs {
		if a := rep.Affected[d]; len(a) > 0 {
			var parts []string
			for _, k := range a {
				parts = append(parts, fmt.Sprintf("%s (+%d −%d)", k.Key, k.FalseAdmits, k.FalseRejects))
			}
			fmt.Fprintf(w, "%s, keys most affected: %s\n", d, strings.Join(parts, ", "))
		}
	}
	if rep.Unlimited > 0 {
		fmt.Fprintf(w, "%d requests matched no limit and were left out\n", rep.Unlimited)
	}
	if rep.Bad > 0 {
		fmt.Fprintf(w, "%d %s could not be read, the first:", rep.Bad, plural(rep.Bad, "line", "lines"))
		for _, b := range rep.BadLines {
			fmt.Fprintf(w, " line %d (%s);", b.Number, b.Reason)
		}
		fmt.Fprintln(w)
	}
	if rep.Late > 0 {
		fmt.Fprintf(w, "%d %s came more than --horizon %v after later ones and were left out, the first: %v\n", rep.Late, plural(int(rep.Late), "line", "lines"), ro.Horizon, rep.LateLines)
	}
	fmt.Fprintf(w, "replayed in %v (%.0f lines/s)\n", took.Round(time.Millisecond), float64(rep.Lines)/took.Seconds())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func limitText(ro replay.Options) string {
	if ro.LimitOf != nil {
		return "limits from the configuration"
	}
	return fmt.Sprintf("L = %d per %v (%v)", ro.Limit.Requests, ro.Limit.Window, ro.WindowKind)
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func writeReplayJSON(w io.Writer, rep replay.Report, ro replay.Options) error {
	type designOut struct {
		Design string `json:"design"`
		replay.Figures
		RoundTripsPerSec float64           `json:"round_trips_per_sec"`
		KeySyncsPerSec   float64           `json:"key_syncs_per_sec"`
		Affected         []replay.Affected `json:"keys_most_affected,omitempty"`
	}
	doc := struct {
		Lines, Keys, Segments int
		Requests, Unlimited   int64
		Late                  int64
		LateLines             []int `json:",omitempty"`
		Bad                   int
		BadLines              []accesslog.BadLine `json:",omitempty"`
		Start, End            time.Time
		Gateways              int
		Routing               string
		Sync                  string
		Designs               []designOut
	}{rep.Lines, rep.Keys, rep.Segments, rep.Requests, rep.Unlimited, rep.Late, rep.LateLines, rep.Bad, rep.BadLines,
		time.Unix(0, rep.Start).UTC(), time.Unix(0, rep.End).UTC(), rep.Gateways, ro.Routing.String(), ro.Sync.String(), nil}
	for _, d := range rep.Designs {
		f := rep.Figures[d]
		doc.Designs = append(doc.Designs, designOut{d, f, rep.PerSec(f.RoundTrips), rep.PerSec(f.KeySyncs), rep.Affected[d]})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return runError{err}
	}
	return nil
}

// replayProgress shows the bytes of the log read: a bar with an ETA on a
// terminal, a line every few seconds otherwise.
type replayProgress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer
	size  int64
	start time.Time
	last  time.Time
}

func newReplayProgress(w io.Writer, size int64) *replayProgress {
	p := &replayProgress{w: w, size: size, start: time.Now(), last: time.Now()}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(size, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("replay"),
			progressbar.OptionShowBytes(true), progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *replayProgress) set(read int64, lines int) {
	if p.bar != nil {
		_ = p.bar.Set64(read)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 5*time.Second && p.size > 0 {
		p.last = now
		share := float64(read) / float64(p.size)
		el := now.Sub(p.start)
		eta := time.Duration(float64(el) / max(share, 1e-9) * (1 - share))
		fmt.Fprintf(p.w, "%d lines, %.0f%% of the file, %s elapsed, about %s left\n", lines, 100*share, el.Round(time.Second), eta.Round(time.Second))
	}
}

func (p *replayProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
