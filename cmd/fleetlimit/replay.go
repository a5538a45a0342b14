package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
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
	"github.com/fleetlimit/fleetlimit/internal/workers"
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
	maxLeftOut                      float64
	sync, window, shift, horizon    time.Duration
	speed                           float64
	seed                            uint64
	asJSON                          bool
}

func newReplayCmd() *cobra.Command {
	var rf replayFlags
	c := &cobra.Command{
		Use:   "replay LOG|-",
		Short: "Run an access log through every design",
		Long: `replay runs a real access log through every design: each request at the time
the log gives, at the gateway it names (--gateway-field) or routed as the
simulator routes, decided by each design with K gateways syncing every Δ and
by the exact limit (central-log, which decides by the store's log). For each
design it prints the requests it admitted that the exact limit would have
refused (false admits) and the reverse (false rejects), its worst window
against the limit, its round trips and its store calls, and the keys it
treated most unlike the exact limit.

Formats (--format, detected from the log's first lines when left out, and
named in the report): csv (time,key[,gateway][,cost], time as RFC 3339 or
seconds since 1970), common and combined (Apache, nginx's default), json (one
object a line: nginx's escape=json, Envoy's json_format; --time-field and the
key's fields by name), envoy (Envoy's default text format), alb (AWS
Application Load Balancer), cloudfront (CloudFront's standard log) and caddy
(Caddy's JSON access log). A mix of formats is refused. LOG - reads standard
input; a gzipped or zstd-compressed log is read as it is.

Servers write a line when a request ends, and merged or rotated logs are out
of order by minutes, so replay first orders the whole log by each request's
time (in memory up to a million lines, then in sorted runs in a temporary
directory): every readable line is replayed at its own time. --horizon D
replays instead as the log is read, holding back only lines within D of the
latest, and leaves out (and counts) a line further back.

Lines that cannot be read or are left out are counted, and the report opens
with them; past --max-left-out percent of the lines replay exits with status
1 and says what to change. --max-bad N stops at the Nth unreadable line.

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
		Example: `  fleetlimit replay access.log.gz --key ip --limit 100 --window 1m
  zcat logs/*.gz | fleetlimit replay - --horizon 10m --limit 100
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
	f.StringVar(&rf.format, "format", "", "the log's format: "+accesslog.FormatNames+"; default: detected from its first lines")
	f.StringVar(&rf.key, "key", "", "what a line's key is (see above); default ip, or key for csv")
	f.StringVar(&rf.timeField, "time-field", "", "json: the time field (RFC 3339, the Common Log Format's time, or seconds since 1970); default the first of "+strings.Join(accesslog.TimeFields, ", ")+" the log has")
	f.StringVar(&rf.gateway, "gateway-field", "", "the field naming the gateway that served a line (json, caddy: a field; envoy: upstream-host; alb: elb; cloudfront: x-edge-location; csv: column); routes by it")
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
	f.DurationVar(&rf.horizon, "horizon", 0, "replay as the log is read, putting a line back in its place only within this of the latest (0: order the whole log first)")
	f.Float64Var(&rf.maxLeftOut, "max-left-out", 1, "exit 1 when more than this percent of the lines are unreadable or left out")
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
	if rf.format != "" {
		if lo.Format, err = accesslog.ParseFormat(rf.format); err != nil {
			return lo, replay.Options{}, usageError{err}
		}
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
	if !(rf.maxLeftOut >= 0 && rf.maxLeftOut <= 100) {
		return lo, ro, usagef("--max-left-out %v: want a percentage from 0 to 100", rf.maxLeftOut)
	}
	if rf.horizon < 0 {
		return lo, ro, usagef("--horizon %v: want 0 (order the whole log) or a positive duration", rf.horizon)
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
	ro.Replaying = bar.replaying
	runs := accesslog.NewTempRuns("")
	defer runs.Close()
	ro.Runs = runs
	ro.Workers = runtime.GOMAXPROCS(0)
	ro.Parallel = workers.Pool(ro.Workers)
	start := time.Now()
	rep, err := replay.Run(r, ro)
	bar.finish()
	if err != nil {
		return runError{fmt.Errorf("%s: %w", path, err)}
	}
	src := source{path: path, format: r.Format(), detected: r.Detected(), timeField: r.TimeField()}
	if csvW != nil {
		csvW.Flush()
		if err := csvW.Error(); err != nil {
			return runError{err}
		}
	}
	w := cmd.OutOrStdout()
	if rf.asJSON {
		if err := writeReplayJSON(w, rep, ro, src); err != nil {
			return err
		}
	} else {
		writeReplayText(w, src, rep, ro, time.Since(start))
	}
	return rf.checkLeftOut(rep)
}

// source is what the report says of the log: its path, and its format.
type source struct {
	path      string
	format    accesslog.Format
	detected  bool
	timeField string
}

func (s source) String() string {
	how := "given"
	if s.detected {
		how = "detected"
	}
	if s.timeField != "" && s.format == accesslog.JSON {
		how += ", time field " + s.timeField
	}
	return fmt.Sprintf("%s (%v, %s)", s.path, s.format, how)
}

// leftOut is the lines of the log not replayed: unreadable, or further
// back than --horizon.
func leftOut(rep replay.Report) int64 { return int64(rep.Bad) + rep.Late }

// leftOutText says how many lines were left out and why, and what to do;
// "" when none were.
func leftOutText(rep replay.Report, ro replay.Options) string {
	n := leftOut(rep)
	if n == 0 {
		return ""
	}
	var why []string
	if rep.Bad > 0 {
		var first []string
		for _, b := range rep.BadLines {
			first = append(first, fmt.Sprintf("line %d (%s)", b.Number, b.Reason))
		}
		why = append(why, fmt.Sprintf("%d unreadable (check --format, --key and --time-field; the first: %s)", rep.Bad, strings.Join(first, "; ")))
	}
	if rep.Late > 0 {
		why = append(why, fmt.Sprintf("%d further back than --horizon %v (leave --horizon out to order the whole log; the first: lines %v)", rep.Late, ro.Horizon, rep.LateLines))
	}
	return fmt.Sprintf("LEFT OUT: %d of %d lines (%.2f%%) are not in these figures: %s", n, rep.Lines, pct(n, int64(rep.Lines)), strings.Join(why, "; "))
}

// checkLeftOut fails the run when more lines were left out than
// --max-left-out allows.
func (rf *replayFlags) checkLeftOut(rep replay.Report) error {
	if n := leftOut(rep); rep.Lines > 0 && pct(n, int64(rep.Lines)) > rf.maxLeftOut {
		return runError{fmt.Errorf("%d of %d lines (%.2f%%) were left out, more than --max-left-out %v%%: the figures above are of a part of the log (fix what the report's first line says, or raise --max-left-out)",
			n, rep.Lines, pct(n, int64(rep.Lines)), rf.maxLeftOut)}
	}
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

func writeReplayText(w io.Writer, src source, rep replay.Report, ro replay.Options, took time.Duration) {
	if s := leftOutText(rep, ro); s != "" {
		fmt.Fprintf(w, "%s\n\n", s)
	}
	fmt.Fprintf(w, "fleetlimit replay %v: %d lines, %d requests of %d keys over %v, K = %d (%v routing), Δ = %v, %s\n",
		src, rep.Lines, rep.Requests, rep.Keys, rep.Duration().Round(time.Second), rep.Gateways, ro.Routing, ro.Sync, limitText(ro))
	if rep.Reordered > 0 {
		fmt.Fprintf(w, "%d lines came after later ones (by up to %v) and were put in their place", rep.Reordered, rep.Disorder.Round(time.Millisecond))
		if rep.Runs > 0 {
			fmt.Fprintf(w, " (%d sorted runs on disk)", rep.Runs)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
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
		fmt.Fprintf(w, "%d %s could not be read and %s left out, the first:", rep.Bad, plural(rep.Bad, "line", "lines"), plural(rep.Bad, "was", "were"))
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

func writeReplayJSON(w io.Writer, rep replay.Report, ro replay.Options, src source) error {
	type designOut struct {
		Design string `json:"design"`
		replay.Figures
		RoundTripsPerSec float64           `json:"round_trips_per_sec"`
		KeySyncsPerSec   float64           `json:"key_syncs_per_sec"`
		Affected         []replay.Affected `json:"keys_most_affected,omitempty"`
	}
	doc := struct {
		Format                string
		FormatDetected        bool
		LeftOut               int64
		LeftOutWhy            string `json:",omitempty"`
		Lines, Keys, Segments int
		Requests, Unlimited   int64
		Late                  int64
		LateLines             []int `json:",omitempty"`
		Reordered             int64
		DisorderSeconds       float64
		Bad                   int
		BadLines              []accesslog.BadLine `json:",omitempty"`
		Start, End            time.Time
		Gateways              int
		Routing               string
		Sync                  string
		Designs               []designOut
	}{src.format.String(), src.detected, leftOut(rep), leftOutText(rep, ro),
		rep.Lines, rep.Keys, rep.Segments, rep.Requests, rep.Unlimited, rep.Late, rep.LateLines, rep.Reordered, rep.Disorder.Seconds(), rep.Bad, rep.BadLines,
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
	phase int // 0 reading, 1 replaying an ordered log
}

func newReplayProgress(w io.Writer, size int64) *replayProgress {
	p := &replayProgress{w: w, size: size, start: time.Now(), last: time.Now()}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(size, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("read"),
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
	now := time.Now()
	if now.Sub(p.last) < 5*time.Second {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	if p.size <= 0 { // a stream: no size to measure against
		fmt.Fprintf(p.w, "%d lines read, %s elapsed\n", lines, el.Round(time.Second))
		return
	}
	share := float64(read) / float64(p.size)
	eta := time.Duration(float64(el) / max(share, 1e-9) * (1 - share))
	fmt.Fprintf(p.w, "%d lines, %.0f%% of the file, %s elapsed, about %s left\n", lines, 100*share, el.Round(time.Second), eta.Round(time.Second))
}

// replaying shows the replay of an ordered log, read whole first.
func (p *replayProgress) replaying(done, total int) {
	if p.bar != nil && p.phase == 0 {
		_ = p.bar.Finish()
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("replay"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	p.phase = 1
	if p.bar != nil {
		_ = p.bar.Set(done)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 5*time.Second {
		p.last = now
		fmt.Fprintf(p.w, "%d of %d lines replayed (%.0f%%), %s elapsed\n", done, total, 100*float64(done)/float64(max(total, 1)), now.Sub(p.start).Round(time.Second))
	}
}

func (p *replayProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
