// Package redisstore is the store protocol of fleetlimit on Redis: an exact
// per-key log of admitted timestamps, or a window in counters (one record a
// key, see counters.go), batched pipelined syncs of many keys (up to 100
// keys of one Cluster slot per script call), the central check and lease
// grants, each as one atomic Lua script, and the fleet's membership.
//
// Each key's data lives in two Redis keys sharing a hash tag, so the store
// works on Redis Cluster. Times are kept to the microsecond. A retried sync
// never counts an admit twice: every admit has a unique member named by its
// gateway, the epoch of the gateway's state for the key and its sequence
// number, so a key re-created at a gateway never overwrites its earlier
// life's admits. The package never reads a clock: times come
// from the caller.
package redisstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/internal/giveup"
	"github.com/fleetlimit/fleetlimit/internal/redisinspect"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// Store is a store.Backend on Redis. It is safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger // Options.Logger
}

// Options configure a Store: how to reach Redis, or the client to use,
// and the store's own settings. The zero value of each field means its
// default.
type Options struct {
	// Addrs are host:port addresses: one node, the Cluster's seed nodes,
	// or the Sentinels; with Network "unix", one socket path. Required
	// unless Client is set.
	Addrs   []string
	Network string // "tcp" (default) or "unix"
	// Mode is "single" (default; several Addrs mean a Cluster, as
	// go-redis's universal client has it), "cluster" or "sentinel".
	Mode string
	// Master is the Sentinel master's name (Mode sentinel).
	Master             string
	Username, Password string
	// SentinelPassword authenticates to the Sentinels themselves.
	SentinelPassword string
	DB               int
	TLS              *tls.Config // nil: plaintext (TLSFiles.Config makes one from PEM files)
	PoolSize         int         // connections per node; default go-redis's
	DialTimeout      time.Duration
	// Client, when set, is the client to use instead of the fields above
	// (a single node, a Cluster or a failover client). It must honour
	// context deadlines (ContextTimeoutEnabled), or a slow Redis would
	// hold requests past the limiter's timeouts: New refuses one that
	// does not. Close closes it.
	Client redis.UniversalClient
	// Prefix starts every Redis key; default "fl:".
	Prefix string
	// Logger receives the Redis client's own log lines (go-redis logs each
	// failed dial, many a second while Redis is down) at debug level; the
	// limiter already says, once per change of state and with the cause,
	// when the store becomes unreachable and when it is back. Default: the
	// lines are dropped. (go-redis has one logger for the process: it
	// writes to the Logger of every open Store.)
	Logger *slog.Logger
}

// New connects as opt says and returns a Store on Redis, its scripts
// loaded.
func New(ctx context.Context, opt Options) (*Store, error) {
	where := strings.Join(opt.Addrs, ",")
	rdb := opt.Client
	if rdb == nil {
		var err error
		if rdb, err = opt.client(); err != nil {
			return nil, fmt.Errorf("redis %s: %w", where, err)
		}
	} else if !honoursDeadlines(rdb) {
		return nil, errors.New("redisstore: the client must set ContextTimeoutEnabled, so that store timeouts reach the socket")
	}
	s := &Store{rdb: rdb, prefix: cmp.Or(opt.Prefix, "fl:"), log: opt.Logger}
	if err := s.load(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", where, err)
	}
	clientLogs.add(s.log)
	return s, nil
}

// client is a go-redis client for opt's address that honours context
// deadlines and never retries on its own.
func (c Options) client() (redis.UniversalClient, error) {
	if len(c.Addrs) == 0 || c.Addrs[0] == "" {
		return nil, errors.New("no Redis address")
	}
	// No retries inside the client: the limiter retries at its next sync,
	// and within a 50 ms timeout a client's own backoff would only turn
	// the real cause (a refused connection) into "context deadline
	// exceeded".
	o := &redis.UniversalOptions{Addrs: c.Addrs, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		Username: c.Username, Password: c.Password, SentinelPassword: c.SentinelPassword, DB: c.DB,
		TLSConfig: c.TLS, PoolSize: c.PoolSize, DialTimeout: c.DialTimeout}
	switch c.Mode {
	case "", "single":
	case "cluster":
		return redis.NewClusterClient(o.Cluster()), nil
	case "sentinel":
		if c.Master == "" {
			return nil, errors.New("sentinel mode needs the master's name")
		}
		o.MasterName = c.Master
		return redis.NewFailoverClient(o.Failover()), nil
	default:
		return nil, fmt.Errorf("redis mode %q: want single, cluster or sentinel", c.Mode)
	}
	switch c.Network {
	case "", "tcp":
	case "unix":
		if len(c.Addrs) != 1 {
			return nil, errors.New("a unix socket is one path")
		}
		so := o.Simple()
		so.Network = "unix"
		return redis.NewClient(so), nil
	default:
		return nil, fmt.Errorf("redis network %q: want tcp or unix", c.Network)
	}
	return redis.NewUniversalClient(o), nil
}

// defaultTLS is the TLS of a rediss:// address before the caller adds its
// own CA or client certificate.
func defaultTLS() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }

// honoursDeadlines reports whether rdb applies context deadlines to its
// sockets.
func honoursDeadlines(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return true // other clients: the caller's responsibility
}

// clientLogs are the Loggers of the open Stores, to which go-redis's one
// process-wide logger writes.
var clientLogs = &logFan{}

// logFan is go-redis's logger, writing to every open Store's Logger.
type logFan struct {
	mu   sync.Mutex
	logs map[*slog.Logger]int // how many open Stores have each
	once sync.Once
}

// add counts one more open Store with log (nil: none), and makes the fan
// go-redis's logger at its first use.
func (f *logFan) add(log *slog.Logger) {
	f.once.Do(func() { redis.SetLogger(f) })
	if log == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs == nil {
		f.logs = map[*slog.Logger]int{}
	}
	f.logs[log]++
}

// drop counts one open Store with log fewer.
func (f *logFan) drop(log *slog.Logger) {
	if log == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs[log]--; f.logs[log] <= 0 {
		delete(f.logs, log)
	}
}

// Printf writes one of go-redis's lines to every open Store's Logger.
func (f *logFan) Printf(ctx context.Context, format string, v ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.logs) == 0 {
		return
	}
	line := "redis client: " + fmt.Sprintf(format, v...)
	for log := range f.logs {
		log.DebugContext(ctx, line)
	}
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// Close closes the client.
func (s *Store) Close() error {
	clientLogs.drop(s.log)
	return s.rdb.Close()
}

func (s *Store) load(ctx context.Context) error {
	for _, sc := range []*redis.Script{syncScript, centralScript, grantScript, counterSyncScript, counterCentralScript, counterGrantScript, multiScript, multiCounterScript} {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

var _ store.Backend = (*Store)(nil)

// keys returns the two Redis keys of a rate-limited key.
func (s *Store) keys(name string) []string {
	tag := s.prefix + "{" + name + "}"
	return []string{tag + ":z", tag + ":h"}
}

// keysOf returns the two Redis keys of a key's limit: Keys(Name) for a key
// with one, and for a part of a key with several the same hash tag and the
// part's number, so that one script reaches every part, on a Cluster too.
func (s *Store) keysOf(k store.Key) []string {
	if k.Part == 0 {
		return s.keys(k.Name)
	}
	tag := s.prefix + "{" + k.Name + "}:" + strconv.Itoa(k.Part)
	return []string{tag + ":z", tag + ":h"}
}

// us converts a timestamp to microseconds, rounding down.
func us(ns int64) int64 {
	if ns < 0 {
		return -((-ns + 999) / 1000)
	}
	return ns / 1000
}

// usUp converts a window bound to microseconds, rounding up, so that a
// stamp at exactly t-W (kept to the microsecond) is outside (t-W, t].
func usUp(ns int64) int64 { return -us(-ns) }

// head is the arguments every script starts with: lo, limit, ttl.
func head(now int64, k store.Key, horizon int64) []any {
	ttl := (int64(k.Window.Size) + horizon) / 1e6
	return []any{usUp(k.Window.Lo(now)), k.Limit, ttl + 1000}
}

// epochOf numbers the window-long epoch that holds now, in which a key
// counts the spare central checks refused (store.Query.Spare), as memstore
// does.
func epochOf(now int64, k store.Key) int64 { return now / int64(k.Window.Size) }

// errSpareCounters refuses spare lease slots on a key counted in buckets.
var errSpareCounters = errors.New("redisstore: spare lease slots and top-ups (store.Push.Spare, store.Query.TopUp, design permit) need the exact log here: window buckets are not supported with them")

// Sync applies a batch of pushes in one pipelined round trip.
func (s *Store) Sync(ctx context.Context, now int64, items []store.SyncItem) error {
	if len(items) == 0 {
		return nil
	}
	err := s.syncOnce(ctx, now, items)
	if err != nil && isNoScript(err) {
		if err = s.load(ctx); err == nil {
			err = s.syncOnce(ctx, now, items) // safe: pushes are idempotent
		}
	}
	return err
}

// scriptBatch is the most keys one sync script call handles, so that a
// call never holds Redis for long.
const scriptBatch = 100

func (s *Store) syncOnce(ctx context.Context, now int64, items []store.SyncItem) error {
	for i := range items {
		if k := items[i].Key; k.Part > 0 && k.Window.Counters() {
			return errPartCounters
		} else if k.Window.Counters() && items[i].Push.Spare > 0 {
			return errSpareCounters
		}
	}
	groups := s.groups(items)
	cmds := make([]*redis.Cmd, len(groups))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for g, idx := range groups {
			keys := make([]string, 0, 2*len(idx))
			var args []any
			sc := syncScript
			if first := &items[idx[0]]; first.Key.Window.Counters() {
				sc = counterSyncScript
				args = counterShared(now, first.Key.Window, first.Push)
			}
			for _, i := range idx {
				it := &items[i]
				if it.Key.Window.Counters() {
					ks := s.counterKeys(it.Key.Name, it.Push.Gateway)
					if !it.Push.WantOwn {
						ks = ks[:2]
					}
					keys = append(keys, ks...)
					args = append(args, counterKeyArg(it.Key, it.Push))
					continue
				}
				keys = append(keys, s.keysOf(it.Key)...)
				args = syncArgs(args, now, it.Key, it.Push)
			}
			cmds[g] = sc.EvalSha(ctx, p, keys, args...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for g, c := range cmds {
		vals, err := c.Int64Slice()
		if err != nil {
			return err
		}
		for _, i := range groups[g] {
			if sp := items[i].Key.Window; sp.Counters() {
				if items[i].Pull, vals, err = counterPull(vals, sp); err != nil {
					return fmt.Errorf("redisstore: %q: %w", items[i].Key.Name, err)
				}
				continue
			}
			if len(vals) < pullFixed || len(vals) < pullFixed+2*int(vals[pullFixed-1]) {
				return fmt.Errorf("redisstore: sync of %q answered %v", items[i].Key.Name, vals)
			}
			items[i].Pull = pullOf(vals)
			vals = vals[pullFixed+2*int(vals[pullFixed-1]):]
		}
	}
	return nil
}

// syncArgs appends the sync script's arguments for one key's push to args.
func syncArgs(args []any, now int64, k store.Key, pu store.Push) []any {
	var until int64
	if pu.Horizon > 0 {
		until = usUp(k.Window.Lo(now + pu.Horizon))
	}
	args = append(args, head(now, k, pu.Horizon)...)
	wantOwn := 0
	if pu.WantOwn {
		wantOwn = 1
	}
	var r store.Repair
	if pu.Repair != nil {
		r = *pu.Repair
	}
	args = append(args, us(now), pu.Gateway, pu.Seq, pu.Ask, until, wantOwn, len(pu.Admits), pu.Epoch, len(pu.Gone),
		len(r.Withdraw), len(r.Reseed), r.ReseedID, pu.Spare, pu.Rate, epochOf(now, k), pu.Refused)
	for _, g := range pu.Gone {
		args = append(args, g)
	}
	for i, t := range pu.Admits {
		args = append(args, us(t), store.CountAt(pu.Counts, i))
	}
	for _, w := range r.Withdraw {
		args = append(args, w.ID, w.N)
	}
	for i, t := range r.Reseed {
		args = append(args, us(t), store.CountAt(r.ReseedCounts, i))
	}
	return args
}

// pullFixed is how many figures of one key's answer of a sync script come
// before its expiring stamps: count, own, granted, outstanding, gen, m.
const pullFixed = 6

// pullOf reads one key's answer of the sync script: count, own, granted,
// outstanding, gen, m, then m pairs of expiring stamp (µs) and count.
func pullOf(vals []int64) store.Pull {
	pull := store.Pull{Count: int(vals[0]), Own: int(vals[1]), Granted: int(vals[2]), Outstanding: int(vals[3]), Gen: uint64(vals[4])}
	m := int(vals[5])
	if m == 0 {
		return pull
	}
	pull.Expiring = make([]int64, m)
	counts := make([]int, m)
	heavy := false
	for j := 0; j < m; j++ {
		pull.Expiring[j] = vals[pullFixed+2*j] * 1000
		counts[j] = int(vals[pullFixed+1+2*j])
		heavy = heavy || counts[j] > 1
	}
	if heavy {
		pull.ExpiringCounts = counts
	}
	return pull
}

// groups splits items into script calls of at most scriptBatch keys, the
// exact logs apart from the counted keys (each has its own script, whose
// keys share a window, a gateway and a kind of push); on a Cluster a call's
// keys must share a slot, so items are grouped by slot.
func (s *Store) groups(items []store.SyncItem) [][]int {
	// counted keys share a call when they share its first arguments
	type kind struct {
		slot    uint16
		spec    window.Spec
		gw      int
		horizon int64
		wantOwn bool
		// the gone list, by identity: a limiter hands every push of a
		// sync the same slice, and pushes with equal lists in other
		// slices only batch apart
		gone    *int
		goneLen int
	}
	var groups [][]int
	_, cluster := s.rdb.(*redis.ClusterClient)
	open := map[kind]int{} // -> open group
	for i := range items {
		var sl uint16
		if cluster {
			sl = slot(s.keysOf(items[i].Key)[0])
		}
		kd := kind{slot: sl}
		if it := &items[i]; it.Key.Window.Counters() {
			kd = kind{sl, it.Key.Window, it.Push.Gateway, it.Push.Horizon, it.Push.WantOwn, nil, len(it.Push.Gone)}
			if len(it.Push.Gone) > 0 {
				kd.gone = &it.Push.Gone[0]
			}
		}
		g, ok := open[kd]
		if !ok || len(groups[g]) == scriptBatch {
			g = len(groups)
			groups = append(groups, nil)
			open[kd] = g
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// slot is the Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag
// (the part between the first "{" and the next "}", when not empty) mod 16384.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// errExpired is the answer of a call that reached Redis after its deadline.
var errExpired = fmt.Errorf("redisstore: the call reached Redis after its deadline and changed nothing (%w); if the caller had not given up, Redis's clock is ahead of the gateway's", context.DeadlineExceeded)

// Ask answers a query for one key, one round trip: the central check, a
// lease grant or a counter, after the push the query carries, if any.
func (s *Store) Ask(ctx context.Context, now int64, k store.Key, gw int, q store.Query) (store.Answer, error) {
	if q.Kind == store.QueryCounter {
		return s.counter(ctx, now, k, q.N)
	}
	if k.Window.Counters() {
		if k.Part > 0 {
			return store.Answer{}, errPartCounters
		}
		if q.Spare > 0 || q.TopUp > 0 {
			return store.Answer{}, errSpareCounters
		}
		return s.askCounted(ctx, now, k, gw, q)
	}
	sc, err := scriptFor(q.Kind, centralScript, grantScript)
	if err != nil {
		return store.Answer{}, err
	}
	var call store.Call
	if q.Call != nil {
		call = *q.Call
	}
	args := append(head(now, k, 0), us(now), gw, q.N, deadlineOf(ctx), call.ID, call.Epoch, len(call.Withdraw))
	for _, w := range call.Withdraw {
		args = append(args, w.ID, w.N)
	}
	args = append(args, q.TopUp, q.Spare, epochOf(now, k))
	var c *redis.Cmd
	if carries(q) {
		pu := *q.Carry
		pu.Ask, pu.Horizon, pu.WantOwn = 0, 0, false
		c = s.carried(ctx, s.keysOf(k), syncScript, syncArgs(nil, now, k, pu), sc, args)
	} else {
		c = sc.Run(ctx, s.rdb, s.keysOf(k), args...)
	}
	return answerOf(c, k, q)
}

// carries reports whether q carries a push that changes anything.
func carries(q store.Query) bool {
	c := q.Carry
	return c != nil && (len(c.Admits) > 0 || c.Repair != nil)
}

// scriptFor is the script of a central check or a grant.
func scriptFor(k store.QueryKind, central, grant *redis.Script) (*redis.Script, error) {
	switch k {
	case store.QueryCentral:
		return central, nil
	case store.QueryGrant:
		return grant, nil
	}
	return nil, fmt.Errorf("redisstore: unknown query kind %d", k)
}

// deadlineOf is the instant the caller gives up (giveup.At) in µs on the
// wall clock, 0 for none.
func deadlineOf(ctx context.Context) int64 {
	if d, ok := giveup.At(ctx); ok {
		return d.UnixMicro()
	}
	return 0
}

// answerOf reads the answer of a central check ({admitted, count, gen} and,
// on the exact log, granted) or
// grant ({granted, gen}) script; a first figure of -1 means the call
// reached Redis after its deadline, or was withdrawn, and changed nothing.
func answerOf(c *redis.Cmd, k store.Key, q store.Query) (store.Answer, error) {
	vals, err := c.Int64Slice()
	if err != nil {
		return store.Answer{}, err
	}
	if len(vals) > 0 && vals[0] < 0 {
		return store.Answer{}, errExpired
	}
	switch {
	case q.Kind == store.QueryGrant && len(vals) == 2:
		return store.Answer{Granted: int(vals[0]), Gen: uint64(vals[1])}, nil
	case q.Kind == store.QueryCentral && len(vals) == 3: // in counters: no top-up
		return store.Answer{Admit: vals[0] == 1, Count: int(vals[1]), Gen: uint64(vals[2])}, nil
	case q.Kind == store.QueryCentral && len(vals) == 4:
		return store.Answer{Admit: vals[0] == 1, Count: int(vals[1]), Gen: uint64(vals[2]), Granted: int(vals[3])}, nil
	}
	return store.Answer{}, fmt.Errorf("redisstore: %v of %q answered %v", q.Kind, k.Name, vals)
}

// carried runs the sync script sync with arguments push for a carried
// push and then the query's script sc, pipelined in one round trip on the
// same keys, and returns the query's answer. The push is idempotent, so
// the scripts are loaded and both sent again when Redis lost them.
func (s *Store) carried(ctx context.Context, keys []string, sync *redis.Script, push []any, sc *redis.Script, args []any) *redis.Cmd {
	send := func() (*redis.Cmd, error) {
		var c *redis.Cmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			sync.EvalSha(ctx, p, keys, push...)
			c = sc.EvalSha(ctx, p, keys, args...)
			return nil
		})
		return c, err
	}
	c, err := send()
	if err != nil && isNoScript(err) {
		if err = s.load(ctx); err == nil {
			c, err = send()
		}
	}
	if err != nil && c != nil && c.Err() == nil {
		c.SetErr(err)
	}
	return c
}

// claimScript: KEYS = the claim; ARGV = id, ttl ms. Takes the claim if it
// is free or id's, renewing it; returns "" then, or the holder.
var claimScript = redis.NewScript(`
local h = redis.call('GET', KEYS[1])
if h and h ~= ARGV[1] then return h end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ''
`)

// releaseScript: KEYS = the claim; ARGV = id. Deletes it if id holds it.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)

// claimKey is the Redis key of the claim of fleet's gateway index gw.
func (s *Store) claimKey(fleet string, gw int) string {
	return s.prefix + "gateway:" + fleet + ":" + strconv.Itoa(gw)
}

// Claim takes or renews fleet's gateway index gw for id for ttl
// (store.Claimer).
func (s *Store) Claim(ctx context.Context, fleet string, gw int, id string, ttl time.Duration) (string, bool, error) {
	h, err := claimScript.Run(ctx, s.rdb, []string{s.claimKey(fleet, gw)}, id, ttl.Milliseconds()).Text()
	if err != nil {
		return "", false, err
	}
	return h, h == "", nil
}

// Release gives fleet's gateway index gw up if id holds it (store.Claimer).
func (s *Store) Release(ctx context.Context, fleet string, gw int, id string) error {
	return releaseScript.Run(ctx, s.rdb, []string{s.claimKey(fleet, gw)}, id).Err()
}

// CounterKey is the Redis key of name's fixed-window counter for the
// window holding now: name followed by the window's start in Unix seconds,
// with no prefix and no hash tag. It is envoyproxy/ratelimit's layout when
// name is its cache key prefix, domain and "key_value_" entries, so that
// both count one key in one place.
func CounterKey(name string, now int64, k store.Key) string {
	lo := (window.Spec{Size: k.Window.Size, Kind: window.Fixed}).Lo(now)
	return name + strconv.FormatInt(floorDiv(lo, 1e9), 10)
}

// counter is QueryCounter as envoyproxy/ratelimit runs it: INCRBY and
// EXPIRE (the window's length) in one pipeline, one round trip.
func (s *Store) counter(ctx context.Context, now int64, k store.Key, n int) (store.Answer, error) {
	key := CounterKey(partCounterName(k), now, k)
	var incr *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.IncrBy(ctx, key, int64(n))
		p.Expire(ctx, key, k.Window.Size)
		return nil
	})
	if err != nil {
		return store.Answer{}, err
	}
	return store.Answer{Count: int(incr.Val())}, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func isNoScript(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}

// stampsOf returns the timestamps (ns, to the microsecond) of a key's log,
// each as many times as the requests its admit stands for
// (redisinspect.Inspector.StampsOf).
func (s *Store) stampsOf(ctx context.Context, k store.Key) ([]int64, error) {
	vals, err := s.rdb.ZRangeWithScores(ctx, s.keysOf(k)[0], 0, -1).Result()
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, v := range vals {
		n := 1
		if m, _ := v.Member.(string); strings.Contains(m, "*") {
			if w, err := strconv.Atoi(m[strings.LastIndexByte(m, '*')+1:]); err == nil {
				n = w
			}
		}
		for range n {
			out = append(out, int64(v.Score)*1000)
		}
	}
	return out, nil
}

// inspector is the Store's redisinspect.Inspector, for the module's tests.
type inspector struct{ s *Store }

func init() { redisinspect.Of = func(st any) redisinspect.Inspector { return inspector{st.(*Store)} } }

func (i inspector) Keys(name string) []string { return i.s.keys(name) }
func (i inspector) Stamps(ctx context.Context, name string) ([]int64, error) {
	return i.s.stampsOf(ctx, store.Key{Name: name})
}
func (i inspector) StampsOf(ctx context.Context, k store.Key) ([]int64, error) {
	return i.s.stampsOf(ctx, k)
}
func (i inspector) Members(ctx context.Context, name string) ([]string, error) {
	return i.s.rdb.ZRange(ctx, i.s.keys(name)[0], 0, -1).Result()
}
func (i inspector) Client() redis.UniversalClient { return i.s.rdb }

// heartbeatScript: KEYS = the fleet's members (a hash: index -> id|expiry
// in ms on Redis's clock); ARGV = id, ttl ms. Forgets lapsed members,
// renews id's membership or gives it the lowest free index, and returns
// {index, live indexes...}, ascending.
var heartbeatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local all = redis.call('HGETALL', KEYS[1])
local live, used, mine = {}, {}, nil
for i = 1, #all, 2 do
  local v = all[i + 1]
  local sep = string.find(v, '|', 1, true)
  local idx, who, exp = tonumber(all[i]), string.sub(v, 1, sep - 1), tonumber(string.sub(v, sep + 1))
  if exp <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    used[idx] = true
    live[#live + 1] = idx
    if who == ARGV[1] then mine = idx end
  end
end
if not mine then
  mine = 0
  while used[mine] do mine = mine + 1 end
  live[#live + 1] = mine
end
redis.call('HSET', KEYS[1], mine, ARGV[1] .. '|' .. (now + ttl))
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
table.sort(live)
local res = {mine}
for _, i in ipairs(live) do res[#res + 1] = i end
return res
`)

// leaveScript: KEYS = the fleet's members; ARGV = id. Removes id's entry.
var leaveScript = redis.NewScript(`
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i + 1], 1, #ARGV[1] + 1) == ARGV[1] .. '|' then redis.call('HDEL', KEYS[1], all[i]) end
end
return 1
`)

// membersKey is the Redis key of fleet's members.
func (s *Store) membersKey(fleet string) string { return s.prefix + "members:" + fleet }

// Heartbeat joins fleet as id or renews its membership (store.Membership).
func (s *Store) Heartbeat(ctx context.Context, fleet, id string, ttl time.Duration) (int, []int, error) {
	if strings.Contains(id, "|") {
		return 0, nil, fmt.Errorf("redisstore: member name %q: must not contain |", id)
	}
	vals, err := heartbeatScript.Run(ctx, s.rdb, []string{s.membersKey(fleet)}, id, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, nil, err
	}
	if len(vals) < 2 {
		return 0, nil, fmt.Errorf("redisstore: heartbeat answered %v", vals)
	}
	live := make([]int, len(vals)-1)
	for i, v := range vals[1:] {
		live[i] = int(v)
	}
	return int(vals[0]), live, nil
}

// Leave ends id's membership of fleet (store.Membership).
func (s *Store) Leave(ctx context.Context, fleet, id string) error {
	return leaveScript.Run(ctx, s.rdb, []string{s.membersKey(fleet)}, id).Err()
}
