package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// A key whose window counts in buckets (window.Spec.Buckets > 0) lives in
// one Redis string, its record, so that a sync costs Redis one GET and one
// SET whatever the limit and the requests' costs:
//
//	c    the record: a 32-byte header (lo, the oldest bucket still counted;
//	     n, the requests counted; ot, the lease slots outstanding; renewed,
//	     when its expiry was last pushed back, in ms; R, the ring's size;
//	     G, the gateways it has entries for), a ring of R 4-byte counters
//	     (bucket b at b mod R), then G 32-byte gateway entries (the epoch
//	     of the gateway's state for the key as 20 decimal digits, the last
//	     sequence number applied, the lease slots it holds)
//	o:gw the same header and ring, counting gateway gw's own admits, kept
//	     only for a design that reads Pull.Own (Push.WantOwn, Query.Own)
//
// Buckets are numbered by floor(t / width) in microseconds, so the client
// (which turns a bucket back into the stamp window.Spec gives it) and the
// script agree without a clock. A push's admits arrive grouped: runs of
// admits in one bucket with one count each. A retried push is recognized
// by its sequence numbers, as memstore does: the record keeps, per gateway,
// the epoch and the last sequence number applied.
//
// Records expire 2 ttl after their expiry was last pushed back, which is
// done only when more than ttl has passed since: every write leaves at
// least ttl, and most writes keep the expiry (SET KEEPTTL), which costs
// Redis half as much as setting one.

// counterLib holds the record helpers the counter scripts use.
const counterLib = `
local HDR = 32
local GW = 32
local ZERO = string.rep('0', 20)
local function slotpos(r, b) return HDR + 1 + 4 * (b % r.R) end
local function gwpos(r, gw) return HDR + 4 * r.R + 1 + GW * gw end
-- load reads record key k (a new one when absent or of another ring size,
-- whose count, if any, moves into bucket b0: counted longer, never less).
local function load(k, R, b0)
  local s = redis.call('GET', k)
  local r = {k = k, mods = {}, R = R, b0 = b0}
  if s then
    local lo, n, ot, renewed, rr, g = struct.unpack('<diidii', s)
    r.s, r.lo, r.n, r.ot, r.renewed, r.G = s, lo, n, ot, renewed, g
    if rr == R then return r end
    r.G, r.ot, r.renewed = 0, 0, 0
    r.s = struct.pack('<diidii', b0, 0, 0, 0, R, 0) .. string.rep('\0', 4 * R)
    r.lo, r.n = b0, 0
    if n > 0 then
      r.mods[slotpos(r, b0)] = n
      r.n = n
    end
    r.new = true
    return r
  end
  r.s = struct.pack('<diidii', b0, 0, 0, 0, R, 0) .. string.rep('\0', 4 * R)
  r.lo, r.n, r.ot, r.renewed, r.G, r.new = b0, 0, 0, 0, 0, true
  return r
end
local function getslot(r, p)
  local v = r.mods[p]
  if v then return v end
  return (struct.unpack('<i4', r.s, p))
end
-- advance forgets the buckets before b0.
local function advance(r, b0)
  if b0 <= r.lo then return end
  local last = math.min(b0 - 1, r.lo + r.R - 1)
  for b = r.lo, last do
    local p = slotpos(r, b)
    local v = getslot(r, p)
    if v ~= 0 then
      r.n = r.n - v
      r.mods[p] = 0
    end
  end
  r.lo = b0
end
-- bump adds c requests to bucket b (never before lo; a bucket past the
-- ring moves the ring on, as a later time would).
local function bump(r, b, c)
  if b < r.lo then return end
  if b >= r.lo + r.R then advance(r, b - r.R + 1) end
  local p = slotpos(r, b)
  r.mods[p] = getslot(r, p) + c
  r.n = r.n + c
end
-- gateway returns gw's entry: epoch, applied, out.
local function gateway(r, gw)
  if gw >= r.G then return ZERO, 0, 0 end
  local e, a, o = struct.unpack('<c20di4', r.s, gwpos(r, gw))
  return e, a, o
end
local function setgateway(r, gw, e, a, o)
  r.gw = {gw, e, a, o}
end
-- save writes the record back with its changes: SET KEEPTTL, or SET PX
-- 2 ttl when the expiry was last pushed back more than ttl ago.
local function save(r, nowms, ttl)
  local renew = r.new or nowms - r.renewed > ttl
  if renew then r.renewed = nowms end
  local G = r.G
  if r.gw and r.gw[1] >= G then G = r.gw[1] + 1 end
  local parts = {struct.pack('<diidii', r.lo, r.n, r.ot, r.renewed, r.R, G)}
  local ps = {}
  for p in pairs(r.mods) do ps[#ps + 1] = p end
  table.sort(ps)
  local at = HDR + 1
  for _, p in ipairs(ps) do
    if p > at then parts[#parts + 1] = string.sub(r.s, at, p - 1) end
    parts[#parts + 1] = struct.pack('<i4', r.mods[p])
    at = p + 4
  end
  local ring = HDR + 4 * r.R
  if at <= ring then parts[#parts + 1] = string.sub(r.s, at, ring) end
  at = ring + 1
  if r.gw then
    local gp = gwpos(r, r.gw[1])
    if gp > at then parts[#parts + 1] = string.sub(r.s, at, gp - 1) end
    for _ = r.G, r.gw[1] - 1 do parts[#parts + 1] = struct.pack('<c20di4', ZERO, 0, 0) end
    parts[#parts + 1] = struct.pack('<c20di4', r.gw[2], r.gw[3], r.gw[4])
    at = gp + GW
  end
  if at <= #r.s then parts[#parts + 1] = string.sub(r.s, at) end
  local v = table.concat(parts)
  if renew then
    redis.call('SET', r.k, v, 'PX', 2 * ttl)
  else
    redis.call('SET', r.k, v, 'KEEPTTL')
  end
end
-- newer reports whether epoch a (20 digits) is after epoch b.
local function newer(a, b) return a > b end
local function expired(deadline)
  deadline = tonumber(deadline)
  if deadline == 0 then return false end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) > deadline
end
`

// counterSyncScript syncs any number of counter keys (of one slot, on a
// Cluster). KEYS are c1, o1, c2, o2, ... (o: the pushing gateway's own
// record); ARGV holds, for each key in turn: b0 (the oldest bucket that
// counts), R, limit, ttl (ms), now (ms), bnow (now's bucket), gw, seq,
// epoch (20 digits), ask, until (buckets before it that count are
// returned; "": none), want own (0 or 1), m, then m groups of bucket,
// admits, count each. It returns, for each key: count, own, granted, e,
// then e pairs of bucket and count.
var counterSyncScript = redis.NewScript(counterLib + `
local res = {}
local p = 0
for k = 1, #KEYS, 2 do
  local b0, R, limit, ttl = tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3]), tonumber(ARGV[p + 4])
  local nowms, bnow, gw, seq = tonumber(ARGV[p + 5]), tonumber(ARGV[p + 6]), tonumber(ARGV[p + 7]), tonumber(ARGV[p + 8])
  local epoch, ask, untl, wantOwn = ARGV[p + 9], tonumber(ARGV[p + 10]), tonumber(ARGV[p + 11]), ARGV[p + 12] == '1'
  local m = tonumber(ARGV[p + 13])
  local r = load(KEYS[k], R, b0)
  advance(r, b0)
  local own
  if wantOwn then
    own = load(KEYS[k + 1], R, b0)
    advance(own, b0)
  end
  local e, applied, out = gateway(r, gw)
  local skip = 0
  if seq > 0 and m > 0 then
    local total = 0
    for i = 1, m do total = total + tonumber(ARGV[p + 12 + 3 * i]) end
    if epoch < e then
      skip = total
    else
      if newer(epoch, e) then e, applied = epoch, 0 end
      if applied >= seq then skip = applied - seq + 1 end
      applied = math.max(applied, seq + total - 1)
    end
  end
  for i = 1, m do
    local b, a, c = tonumber(ARGV[p + 11 + 3 * i]), tonumber(ARGV[p + 12 + 3 * i]), tonumber(ARGV[p + 13 + 3 * i])
    local take = a - math.min(skip, a)
    skip = skip - (a - take)
    if take > 0 then
      bump(r, b, take * c)
      if own then bump(own, b, take * c) end
    end
  end
  r.ot = r.ot - out
  local granted = 0
  if ask > 0 then
    granted = math.max(math.min(ask, limit - r.n - r.ot), 0)
    r.ot = r.ot + granted
  end
  setgateway(r, gw, e, applied, granted)
  res[#res + 1] = r.n
  if own then res[#res + 1] = own.n else res[#res + 1] = 0 end
  res[#res + 1] = granted
  local at = #res + 1
  res[at] = 0
  if untl then
    for b = r.lo, math.min(untl - 1, r.lo + R - 1) do
      local v = getslot(r, slotpos(r, b))
      if v ~= 0 then
        res[at] = res[at] + 1
        res[#res + 1] = b
        res[#res + 1] = v
      end
    end
  end
  save(r, nowms, ttl)
  if own then save(own, nowms, ttl) end
  p = p + 13 + 3 * m
end
return res
`)

// counterCentralScript: KEYS = c, o; ARGV = b0, R, limit, ttl, now (ms),
// bnow, gw, n, deadline (µs, 0: none), own (0 or 1). Returns {admitted,
// count}, or {-1, 0} past the deadline.
var counterCentralScript = redis.NewScript(counterLib + `
local b0, R, limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local nowms, bnow, n = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[8])
if expired(ARGV[9]) then return {-1, 0} end
local r = load(KEYS[1], R, b0)
advance(r, b0)
if r.n + r.ot + n > limit then return {0, r.n} end
if n > 0 then
  bump(r, bnow, n)
  save(r, nowms, ttl)
  if ARGV[10] == '1' then
    local own = load(KEYS[2], R, b0)
    advance(own, b0)
    bump(own, bnow, n)
    save(own, nowms, ttl)
  end
end
return {1, r.n}
`)

// counterGrantScript: KEYS = c, o; ARGV = b0, R, limit, ttl, now (ms),
// bnow, gw, n, deadline. Returns the slots granted, or -1 past the deadline.
var counterGrantScript = redis.NewScript(counterLib + `
local b0, R, limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local nowms, gw, n = tonumber(ARGV[5]), tonumber(ARGV[7]), tonumber(ARGV[8])
if expired(ARGV[9]) then return -1 end
local r = load(KEYS[1], R, b0)
advance(r, b0)
local g = math.max(math.min(n, limit - r.n - r.ot), 0)
if g > 0 then
  local e, applied, out = gateway(r, gw)
  r.ot = r.ot + g
  setgateway(r, gw, e, applied, out + g)
  save(r, nowms, ttl)
end
return g
`)

// counterKeys returns the Redis keys of a counted key: its record and
// gateway gw's own record.
func (s *Store) counterKeys(name string, gw int) []string {
	tag := s.prefix + "{" + name + "}"
	return []string{tag + ":c", tag + ":o:" + strconv.Itoa(gw)}
}

// ring is the size of a counted key's ring: every bucket that can count at
// once, and one to spare.
func ring(sp window.Spec) int64 {
	w := sp.Width()
	return (int64(sp.Size)+w-1)/w + 2
}

// counterHead is the arguments every counter script starts with: b0, R,
// limit, ttl (ms), now (ms), bnow.
func counterHead(now int64, k store.Key, horizon int64) []any {
	sp := k.Window
	ttl := (int64(sp.Size)+horizon)/1e6 + 1000
	return []any{sp.FirstBucket(sp.Lo(now)), ring(sp), k.Limit, ttl, floorDiv(now, 1e6), sp.Bucket(now)}
}

// epochArg is an epoch as 20 decimal digits, which Lua compares as strings
// in the order of the numbers.
func epochArg(e uint64) string { return fmt.Sprintf("%020d", e) }

// counterSyncArgs appends the counter sync script's arguments for one key's
// push to args: its admits as runs of one bucket and one count.
func counterSyncArgs(args []any, now int64, k store.Key, pu store.Push) []any {
	sp := k.Window
	until := any("")
	if pu.Horizon > 0 {
		until = sp.FirstBucket(sp.Lo(now + pu.Horizon))
	}
	wantOwn := 0
	if pu.WantOwn {
		wantOwn = 1
	}
	args = append(args, counterHead(now, k, pu.Horizon)...)
	args = append(args, pu.Gateway, pu.Seq, epochArg(pu.Epoch), pu.Ask, until, wantOwn)
	at := len(args)
	args = append(args, 0)
	groups := 0
	for i := 0; i < len(pu.Admits); {
		b, c := sp.Bucket(pu.Admits[i]), store.CountAt(pu.Counts, i)
		j := i + 1
		for j < len(pu.Admits) && sp.Bucket(pu.Admits[j]) == b && store.CountAt(pu.Counts, j) == c {
			j++
		}
		args = append(args, b, j-i, c)
		groups++
		i = j
	}
	args[at] = groups
	return args
}

// counterPull reads one key's answer of the counter sync script (count,
// own, granted, e, then e pairs of bucket and count) and returns the rest.
func counterPull(vals []int64, sp window.Spec) (store.Pull, []int64, error) {
	if len(vals) < 4 || len(vals) < 4+2*int(vals[3]) {
		return store.Pull{}, nil, fmt.Errorf("counter sync answered %v", vals)
	}
	pull := store.Pull{Count: int(vals[0]), Own: int(vals[1]), Granted: int(vals[2])}
	m := int(vals[3])
	if m > 0 {
		pull.Expiring = make([]int64, m)
		counts := make([]int, m)
		heavy := false
		for j := range m {
			pull.Expiring[j] = sp.BucketStamp(vals[4+2*j])
			counts[j] = int(vals[5+2*j])
			heavy = heavy || counts[j] > 1
		}
		if heavy {
			pull.ExpiringCounts = counts
		}
	}
	return pull, vals[4+2*m:], nil
}

// askCounted is Ask for a counted key: the central check or a grant, after
// the push the query carries.
func (s *Store) askCounted(ctx context.Context, now int64, k store.Key, gw int, q store.Query) (store.Answer, error) {
	var sc *redis.Script
	switch q.Kind {
	case store.QueryCentral:
		sc = counterCentralScript
	case store.QueryGrant:
		sc = counterGrantScript
	default:
		return store.Answer{}, fmt.Errorf("redisstore: unknown query kind %d", q.Kind)
	}
	own := 0
	if q.Own {
		own = 1
	}
	args := append(counterHead(now, k, 0), gw, q.N, deadlineOf(ctx), own)
	keys := s.counterKeys(k.Name, gw)
	var c *redis.Cmd
	if q.Carry != nil && len(q.Carry.Admits) > 0 {
		pu := *q.Carry
		pu.Ask, pu.Horizon = 0, 0
		c = s.carried(ctx, keys, counterSyncScript, counterSyncArgs(nil, now, k, pu), sc, args)
	} else {
		c = sc.Run(ctx, s.rdb, keys, args...)
	}
	return answerOf(c, k, q)
}
