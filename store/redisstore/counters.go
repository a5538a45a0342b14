package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// A key whose window counts in buckets (window.Spec.Buckets > 0) lives in
// one Redis string, its record, so that a sync costs Redis one GET and a
// few SETRANGEs of the bytes that changed, whatever the limit and the
// requests' costs:
//
//	c    the record: a 40-byte header (lo, the oldest bucket still
//	     counted; n, the requests counted; ot, the lease slots
//	     outstanding; renewed, when its expiry was last pushed back, in
//	     ms; R, the ring's size; G, the gateways it has entries for; hi,
//	     the newest bucket written), a ring of R 4-byte counters (bucket
//	     b at b mod R), then G 32-byte gateway entries (the epoch of the
//	     gateway's state for the key as 20 decimal digits, the last
//	     sequence number applied, the lease slots it holds)
//	o:gw the same header and ring, counting gateway gw's own admits, kept
//	     only for a design that reads Pull.Own (Push.WantOwn, Query.Own)
//
// Only the counters of buckets lo..hi are meaningful; the ring's other
// slots hold what earlier laps left there and are zeroed when hi moves
// over them, in the same write as the new bucket's count. A bucket's count
// leaves n when lo passes it, with no write to its slot.
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
// least ttl, and most writes leave the expiry alone.
//
// What a sync costs Redis is mostly the calls a script makes (about 0.45 µs
// each on the machine of docs/performance.md) and the strings it makes
// (the GET of the record); the layout is shaped to make few of both.

// counterLib holds the record helpers the counter scripts use.
const counterLib = `
local HDR = 40
local GW = 32
local ZERO = string.rep('0', 20)
local HFMT = '<diidiid'
local function slotpos(r, b) return HDR + 1 + 4 * (b % r.R) end
local function gwpos(r, gw) return HDR + 4 * r.R + 1 + GW * gw end
local function fresh(r, b0, R)
  r.lo, r.n, r.ot, r.renewed, r.G, r.hi, r.new = b0, 0, 0, 0, 0, b0 - 1, true
  r.s = ''
end
-- load reads record key k (a new one when absent or of another ring size,
-- whose count, if any, moves into bucket b0: counted longer, never less).
local function load(k, R, b0)
  local s = redis.call('GET', k)
  local r = {k = k, mods = {}, R = R}
  if not s then
    fresh(r, b0, R)
    return r
  end
  local lo, n, ot, renewed, rr, g, hi = struct.unpack(HFMT, s)
  r.s, r.lo, r.n, r.ot, r.renewed, r.G, r.hi = s, lo, n, ot, renewed, g, hi
  if rr ~= R then
    fresh(r, b0, R)
    if n > 0 then
      r.mods[slotpos(r, b0)] = n
      r.n, r.hi = n, b0
    end
  end
  return r
end
local function getslot(r, b)
  local p = slotpos(r, b)
  local v = r.mods[p]
  if v then return v end
  if r.new then return 0 end
  return (struct.unpack('<i4', r.s, p))
end
-- advance forgets the buckets before b0.
local function advance(r, b0)
  if b0 <= r.lo then return end
  local last = b0 - 1
  if r.hi < last then last = r.hi end
  if r.lo + r.R - 1 < last then last = r.lo + r.R - 1 end
  for b = r.lo, last do r.n = r.n - getslot(r, b) end
  if b0 > r.hi then r.n = 0 end
  r.lo = b0
end
-- bump adds c requests to bucket b (never before lo; a bucket past the
-- ring moves the ring on, as a later time would).
local function bump(r, b, c)
  if b < r.lo then return end
  if b >= r.lo + r.R then advance(r, b - r.R + 1) end
  if b > r.hi then
    local from = r.hi + 1
    if from < b - r.R + 1 then from = b - r.R + 1 end
    for z = from, b - 1 do r.mods[slotpos(r, z)] = 0 end
    r.mods[slotpos(r, b)] = c
    r.hi = b
  else
    r.mods[slotpos(r, b)] = getslot(r, b) + c
  end
  r.n = r.n + c
end
-- gateway returns gw's entry: epoch, applied, out.
local function gateway(r, gw)
  if gw >= r.G then return ZERO, 0, 0 end
  local e, a, o = struct.unpack('<c20di4', r.s, gwpos(r, gw))
  return e, a, o
end
-- save writes what changed: the header, the ring's changed slots in runs,
-- gateway entry gw (e, a, o) when given; SET when the record is new, and
-- PEXPIRE 2 ttl when its expiry was last pushed back more than ttl ago.
local function save(r, nowms, ttl, gw, e, a, o)
  local renew = r.new or nowms - r.renewed > ttl
  if renew then r.renewed = nowms end
  local G = r.G
  if gw and gw >= G then G = gw + 1 end
  local hdr = struct.pack(HFMT, r.lo, r.n, r.ot, r.renewed, r.R, G, r.hi)
  if r.new then
    local ring = {}
    for i = 0, r.R - 1 do ring[i + 1] = struct.pack('<i4', r.mods[HDR + 1 + 4 * i] or 0) end
    local v = hdr .. table.concat(ring)
    if gw then v = v .. string.rep('\0', GW * gw) .. struct.pack('<c20di4', e, a, o) end
    redis.call('SET', r.k, v, 'PX', 2 * ttl)
    return
  end
  redis.call('SETRANGE', r.k, 0, hdr)
  local ps = {}
  for p in pairs(r.mods) do ps[#ps + 1] = p end
  if #ps > 1 then table.sort(ps) end
  local i = 1
  while i <= #ps do
    local j = i
    while j < #ps and ps[j + 1] == ps[j] + 4 do j = j + 1 end
    local vs = {}
    for q = i, j do vs[#vs + 1] = r.mods[ps[q]] end
    local v
    if #vs == 1 then v = struct.pack('<i4', vs[1]) else v = struct.pack('<' .. string.rep('i4', #vs), unpack(vs)) end
    redis.call('SETRANGE', r.k, ps[i] - 1, v)
    i = j + 1
  end
  if gw then redis.call('SETRANGE', r.k, gwpos(r, gw) - 1, struct.pack('<c20di4', e, a, o)) end
  if renew then redis.call('PEXPIRE', r.k, 2 * ttl) end
end
local function expired(deadline)
  deadline = tonumber(deadline)
  if deadline == 0 then return false end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) > deadline
end
`

// counterSyncScript syncs any number of counted keys of one window, one
// gateway and one kind of push (of one slot, on a Cluster). KEYS are c1,
// o1, c2, o2, ... (o: the pushing gateway's own record). ARGV[1..7] hold
// what the keys share: b0 (the oldest bucket that counts), R, ttl (ms), now
// (ms), until (buckets before it that count are returned; "": none), gw,
// want own (0 or 1); then one argument a key, packed little-endian so that
// one struct.unpack reads it: limit (i4), seq (d), epoch (20 digits), ask
// (i4), m (i4), then m groups of bucket (d), admits (i4) and count each
// (i4). It returns, for each key: count, own, granted, e, then e pairs of
// bucket and count.
var counterSyncScript = redis.NewScript(counterLib + `
local b0, R, ttl, nowms = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local untl, gw, wantOwn = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1'
local res = {}
for k = 1, #KEYS, 2 do
  local a = ARGV[7 + (k + 1) / 2]
  local limit, seq, epoch, ask, m, at = struct.unpack('<idc20ii', a)
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
    local total, q = 0, at
    for _ = 1, m do
      local _, n, _, nq = struct.unpack('<dii', a, q)
      total, q = total + n, nq
    end
    if epoch < e then
      skip = total
    else
      if epoch > e then e, applied = epoch, 0 end
      if applied >= seq then skip = applied - seq + 1 end
      applied = math.max(applied, seq + total - 1)
    end
  end
  for _ = 1, m do
    local b, n, c, nq = struct.unpack('<dii', a, at)
    at = nq
    local take = n - math.min(skip, n)
    skip = skip - (n - take)
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
  res[#res + 1] = r.n
  if own then res[#res + 1] = own.n else res[#res + 1] = 0 end
  res[#res + 1] = granted
  local ne = #res + 1
  res[ne] = 0
  if untl then
    local last = untl - 1
    if r.hi < last then last = r.hi end
    for b = r.lo, last do
      local v = getslot(r, b)
      if v ~= 0 then
        res[ne] = res[ne] + 1
        res[#res + 1] = b
        res[#res + 1] = v
      end
    end
  end
  if seq > 0 and m > 0 or out ~= 0 or granted ~= 0 then
    save(r, nowms, ttl, gw, e, applied, granted)
  else
    save(r, nowms, ttl)
  end
  if own then save(own, nowms, ttl) end
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
  save(r, nowms, ttl, gw, e, applied, out + g)
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

// counterShared is the counter sync script's arguments that every key of
// one call shares (see counterSyncScript).
func counterShared(now int64, sp window.Spec, pu store.Push) []any {
	ttl := (int64(sp.Size)+pu.Horizon)/1e6 + 1000
	until := any("")
	if pu.Horizon > 0 {
		until = sp.FirstBucket(sp.Lo(now + pu.Horizon))
	}
	wantOwn := 0
	if pu.WantOwn {
		wantOwn = 1
	}
	return []any{sp.FirstBucket(sp.Lo(now)), ring(sp), ttl, floorDiv(now, 1e6), until, pu.Gateway, wantOwn}
}

// counterKeyArg packs one key's part of a counter sync: its limit, the
// push's numbering and ask, and its admits as runs of one bucket and one
// count.
func counterKeyArg(k store.Key, pu store.Push) string {
	b := make([]byte, 0, 40+16*len(pu.Admits))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(k.Limit)))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(pu.Seq)))
	b = fmt.Appendf(b, "%020d", pu.Epoch)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(pu.Ask)))
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	groups := 0
	sp := k.Window
	for i := 0; i < len(pu.Admits); {
		bk, c := sp.Bucket(pu.Admits[i]), store.CountAt(pu.Counts, i)
		j := i + 1
		for j < len(pu.Admits) && sp.Bucket(pu.Admits[j]) == bk && store.CountAt(pu.Counts, j) == c {
			j++
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(bk)))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(j-i)))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(c)))
		groups++
		i = j
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(int32(groups)))
	return string(b)
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
		push := append(counterShared(now, k.Window, pu), counterKeyArg(k, pu))
		c = s.carried(ctx, keys, counterSyncScript, push, sc, args)
	} else {
		c = sc.Run(ctx, s.rdb, keys, args...)
	}
	return answerOf(c, k, q)
}
