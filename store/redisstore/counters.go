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
// one Redis string, its record, so that a sync costs Redis one GET and two
// SETRANGEs of the bytes that changed, whatever the limit and the
// requests' costs:
//
//	c    the record: G, the gateways it has entries for (4 bytes); G
//	     32-byte gateway entries (the epoch of the gateway's state for the
//	     key as 20 decimal digits, the last sequence number applied, the
//	     lease slots it holds); a 40-byte header (lo, the oldest bucket
//	     still counted; n, the requests counted; ot, the lease slots
//	     outstanding; renewed, when its expiry was last pushed back, in
//	     ms; R, the ring's size; gen, the record's life, Pull.Gen, drawn
//	     from Redis's clock when it was made; hi, the newest bucket
//	     written); then a ring of R 4-byte counters, bucket b at b mod R
//	w    a hash: "gw" the last central admit of gateway gw that named
//	     itself ("epoch:id:bucket:n:own"), "x:gw:epoch:id" a withdrawn one
//	     that had not been counted (it never may), "r:gw" the gateway's
//	     last re-seed applied ("epoch:id", store.Repair.ReseedID)
//	o:gw the same with no gateway entries, counting gateway gw's own
//	     admits, kept only for a design that reads Pull.Own
//	     (Push.WantOwn, Query.Own)
//
// A sync writes two runs of bytes: the pushing gateway's entry (when it
// changed) through the header, and the ring's changed counters. Only the
// counters of buckets lo..hi mean anything; the others hold what earlier
// laps left and are zeroed when hi moves over them, in the same run as the
// new bucket's count. A bucket's count leaves n when lo passes it, with no
// write to its counter.
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
// What a sync costs Redis is mostly the calls a script makes (about 0.5 µs
// each on the machine of docs/performance.md, the GET of the record about
// 1 µs) and the strings and tables it makes; the layout and the code are
// shaped to make few of both.

// counterLib holds the record helpers the counter scripts use.
const counterLib = `
local sunpack, pack, call, sub = struct.unpack, struct.pack, redis.call, string.sub
local HDR, GW = 40, 32
local ZERO = string.rep('0', 20)
local HFMT, EFMT = '<diidiid', '<c20di4'
local fmts = {}
local function ints(n)
  local f = fmts[n]
  if not f then
    f = '<' .. string.rep('i4', n)
    fmts[n] = f
  end
  return f
end
-- load reads record key k (a new one when absent or of another ring size,
-- whose count, if any, moves into the newest bucket the ring can hold,
-- b0 + R - 2, at or after now's: counted longer, never less).
local function load(k, R, b0)
  local s = call('GET', k)
  local r = {k = k, R = R, mods = {}, nmods = 0, G = 0, h = 5, lo = b0, n = 0, ot = 0, renewed = 0, hi = b0 - 1, s = '', gen = 0}
  if not s then
    r.new = true
    local t = call('TIME')
    r.gen = (tonumber(t[1]) * 1000000 + tonumber(t[2])) % 2147483646 + 1
    return r
  end
  local g = sunpack('<i4', s)
  local h = 5 + GW * g
  local lo, n, ot, renewed, rr, gen, hi = sunpack(HFMT, s, h)
  r.gen = gen
  if rr ~= R then
    r.new = true
    if n > 0 then r.mods[(b0 + R - 2) % R], r.nmods, r.n, r.hi = n, 1, n, b0 + R - 2 end
    return r
  end
  r.s, r.G, r.h, r.lo, r.n, r.ot, r.renewed, r.hi = s, g, h, lo, n, ot, renewed, hi
  return r
end
-- getslot is bucket b's count (b in lo..hi, or past hi: 0).
local function getslot(r, b)
  if b > r.hi then return 0 end
  local i = b % r.R
  local v = r.mods[i]
  if v then return v end
  if r.new then return 0 end
  return (sunpack('<i4', r.s, r.h + HDR + 4 * i))
end
-- advance forgets the buckets before b0.
local function advance(r, b0)
  if b0 <= r.lo then return end
  if b0 > r.hi then
    r.n = 0
  else
    for b = r.lo, b0 - 1 do r.n = r.n - getslot(r, b) end
  end
  r.lo = b0
end
local function setslot(r, b, v)
  local i = b % r.R
  if not r.mods[i] then r.nmods = r.nmods + 1 end
  r.mods[i] = v
end
-- bump adds c requests to bucket b (never before lo; a bucket past the
-- ring moves the ring on, as a later time would).
local function bump(r, b, c)
  if b < r.lo then return end
  if b >= r.lo + r.R then advance(r, b - r.R + 1) end
  if b > r.hi then
    local from = r.hi + 1
    if from < b - r.R + 1 then from = b - r.R + 1 end
    for z = from, b - 1 do setslot(r, z, 0) end
    setslot(r, b, c)
    r.hi = b
  else
    setslot(r, b, getslot(r, b) + c)
  end
  r.n = r.n + c
end
-- gateway returns gw's entry: epoch, applied, out.
local function gateway(r, gw)
  if gw >= r.G then return ZERO, 0, 0 end
  return sunpack(EFMT, r.s, 5 + GW * gw)
end
-- whole is the record as a string, with gw's entry (e, a, o) when given.
local function whole(r, G, hdr, gw, e, a, o)
  local parts = {pack('<i4', G)}
  if r.G > 0 then parts[2] = sub(r.s, 5, r.h - 1) end
  for i = r.G, G - 1 do parts[#parts + 1] = pack(EFMT, ZERO, 0, 0) end
  parts[#parts + 1] = hdr
  local vs = {}
  for i = 0, r.R - 1 do
    local v = r.mods[i]
    if not v then
      if r.new then v = 0 else v = sunpack('<i4', r.s, r.h + HDR + 4 * i) end
    end
    vs[i + 1] = v
  end
  parts[#parts + 1] = pack(ints(r.R), unpack(vs))
  local s = table.concat(parts)
  if gw then s = sub(s, 1, 4 + GW * gw) .. pack(EFMT, e, a, o) .. sub(s, 5 + GW * (gw + 1)) end
  for d, v in pairs(r.settled or {}) do s = sub(s, 1, 4 + GW * d) .. pack(EFMT, v[1], v[2], 0) .. sub(s, 5 + GW * (d + 1)) end
  return s
end
-- settle returns the lease slots of the gone gateways (not gw) to the room.
local function settle(r, gone, gw)
  for _, d in ipairs(gone) do
    if d ~= gw and d < r.G then
      local de, da, dout = sunpack(EFMT, r.s, 5 + GW * d)
      if dout ~= 0 then
        r.ot = r.ot - dout
        r.settled = r.settled or {}
        r.settled[d] = {de, da}
      end
    end
  end
end
-- rings writes the changed counters, a SETRANGE a run of adjacent ones.
local function rings(r)
  local base = r.h + HDR - 1
  if r.nmods == 1 then
    local i, v = next(r.mods)
    call('SETRANGE', r.k, base + 4 * i, pack('<i4', v))
    return
  end
  local ps = {}
  for i in pairs(r.mods) do ps[#ps + 1] = i end
  table.sort(ps)
  local j = 1
  while j <= #ps do
    local q = j
    while q < #ps and ps[q + 1] == ps[q] + 1 do q = q + 1 end
    local vs = {}
    for x = j, q do vs[#vs + 1] = r.mods[ps[x]] end
    call('SETRANGE', r.k, base + 4 * ps[j], pack(ints(#vs), unpack(vs)))
    j = q + 1
  end
end
-- save writes what changed: gateway gw's entry (e, a, o) when given
-- through the header, and the changed counters; the whole record (SET)
-- when it is new or gains a gateway. It pushes the expiry back to 2 ttl
-- when that was last done more than ttl ago.
local function save(r, nowms, ttl, gw, e, a, o)
  local renew = r.new or nowms - r.renewed > ttl
  if renew then r.renewed = nowms end
  local G = r.G
  if gw and gw >= G then G = gw + 1 end
  local hdr = pack(HFMT, r.lo, r.n, r.ot, r.renewed, r.R, r.gen, r.hi)
  if r.new or G ~= r.G then
    call('SET', r.k, whole(r, G, hdr, gw, e, a, o), 'PX', 2 * ttl)
    return
  end
  if gw then
    local ep = 5 + GW * gw
    local mid = ''
    if gw < G - 1 then mid = sub(r.s, ep + GW, r.h - 1) end
    call('SETRANGE', r.k, ep - 1, pack(EFMT, e, a, o) .. mid .. hdr)
  else
    call('SETRANGE', r.k, r.h - 1, hdr)
  end
  if r.nmods > 0 then rings(r) end
  for d, v in pairs(r.settled or {}) do call('SETRANGE', r.k, 4 + GW * d, pack(EFMT, v[1], v[2], 0)) end
  if renew then call('PEXPIRE', r.k, 2 * ttl) end
end
local function expired(deadline)
  deadline = tonumber(deadline)
  if deadline == 0 then return false end
  local t = call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) > deadline
end
-- unbump takes c requests off bucket b, if it still counts.
local function unbump(r, b, c)
  if b < r.lo or b > r.hi then return end
  setslot(r, b, getslot(r, b) - c)
  r.n = r.n - c
end
-- centralName names gateway gw's central admit id of epoch e in w.
local function centralName(gw, e, id)
  return gw .. ':' .. e .. ':' .. string.format('%d', id)
end
-- withdraw takes back gateway gw's central admit id (of c requests in
-- bucket b) if r counted it, or bars it from w for good; own is gw's own
-- record, when loaded.
local function withdraw(r, own, wk, gw, e, id, b, c, ttl)
  local name = centralName(gw, e, id)
  local v = call('HGET', wk, gw)
  if v and sub(v, 1, #name + 1) == name .. ':' then
    local _, _, vb, vc, vo = string.find(v, ':(%-?%d+):(%d+):(%d)$')
    unbump(r, tonumber(vb), tonumber(vc))
    if own and vo == '1' then unbump(own, tonumber(vb), tonumber(vc)) end
    call('HDEL', wk, gw)
  else
    call('HSET', wk, 'x:' .. name, 1)
    call('PEXPIRE', wk, 2 * ttl)
  end
end
`

// counterSyncScript syncs any number of counted keys of one window, one
// gateway and one kind of push (of one slot, on a Cluster). KEYS are each
// key's record and its hash of central admits, each followed by the pushing
// gateway's own record when it wants its own count (or when the caller
// passes it anyway). ARGV[1..8] hold what the keys share: b0 (the oldest
// bucket that counts), R, ttl (ms), now (ms), until (buckets before it that
// count are returned; "": none), gw, want own (0 or 1), g; then g gone
// gateways (whose lease slots are settled); then one argument a key,
// packed little-endian so that one struct.unpack reads it: limit (i4), seq
// (d), epoch (20 digits), ask (i4), m (i4), then m groups of bucket (d),
// admits (i4) and count each (i4); then nw (i4) withdrawals of query id
// (d), bucket (d) and count (i4), applied first; then the re-seed's id
// (d) and nr (i4) re-seeded groups of bucket (d) and count (i4), applied
// unless the gateway's re-seed of that id (or a later one) was, as the
// hash of central admits notes ("r:gw" = "epoch:id"). It returns, for each key: count,
// own, granted, outstanding, gen, e, then e pairs of bucket and count.
var counterSyncScript = redis.NewScript(counterLib + `
-- reseeding reports whether gateway gw's re-seed id of epoch (20 digits)
-- is one key w has not noted, and notes it: a retried re-seed counts
-- once, an older one, late, not at all; id 0 always counts.
local function reseeding(w, gw, epoch, id, ttl)
  if id == 0 then return true end
  local f = 'r:' .. gw
  local last = call('HGET', w, f)
  if last then
    local le, li = sub(last, 1, 20), tonumber(sub(last, 22))
    if epoch < le or epoch == le and id <= li then return false end
  end
  call('HSET', w, f, epoch .. ':' .. string.format('%d', id))
  call('PEXPIRE', w, 2 * ttl)
  return true
end
local b0, R, ttl, nowms = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local untl, gw, wantOwn = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1'
local ng = tonumber(ARGV[8])
local gone = {}
for i = 1, ng do gone[i] = tonumber(ARGV[8 + i]) end
local first = 8 + ng
local res = {}
local nres = 0
local stride = #KEYS / (#ARGV - first)
for i = 1, #ARGV - first do
  local k = 1 + (i - 1) * stride
  local a = ARGV[first + i]
  local limit, seq, epoch, ask, m, at = sunpack('<idc20ii', a)
  local r = load(KEYS[k], R, b0)
  advance(r, b0)
  local own
  if wantOwn then
    own = load(KEYS[k + 2], R, b0)
    advance(own, b0)
  end
  local e, applied, out = gateway(r, gw)
  if ng > 0 then settle(r, gone, gw) end
  local wq = at
  for _ = 1, m do wq = wq + 16 end
  local nw
  nw, wq = sunpack('<i4', a, wq)
  for _ = 1, nw do
    local id, b, c, nq = sunpack('<ddi', a, wq)
    wq = nq
    withdraw(r, own, KEYS[k + 1], gw, epoch, id, b, c, ttl)
  end
  local skip = 0
  if seq > 0 and m > 0 then
    local total, q = 0, at
    for _ = 1, m do
      local _, n, _, nq = sunpack('<dii', a, q)
      total, q = total + n, nq
    end
    if epoch < e then
      skip = total
    else
      if epoch > e then e, applied = epoch, 0 end
      if applied >= seq then skip = applied - seq + 1 end
      if seq + total - 1 > applied then applied = seq + total - 1 end
    end
  end
  for _ = 1, m do
    local b, n, c, nq = sunpack('<dii', a, at)
    at = nq
    local take = n - skip
    if take < 0 then take = 0 end
    skip = skip - (n - take)
    if take > 0 then
      bump(r, b, take * c)
      if own then bump(own, b, take * c) end
    end
  end
  local rid, nr
  rid, nr, wq = sunpack('<di4', a, wq)
  local fresh = nr > 0 and reseeding(KEYS[k + 1], gw, epoch, rid, ttl)
  for _ = 1, nr do
    local b, c, nq = sunpack('<di', a, wq)
    wq = nq
    if fresh then
      bump(r, b, c)
      if own then bump(own, b, c) end
    end
  end
  r.ot = r.ot - out
  local granted = 0
  if ask > 0 then
    granted = limit - r.n - r.ot
    if ask < granted then granted = ask end
    if granted < 0 then granted = 0 end
    r.ot = r.ot + granted
  end
  local ownN = 0
  if own then ownN = own.n end
  res[nres + 1], res[nres + 2], res[nres + 3], res[nres + 4], res[nres + 5], res[nres + 6] = r.n, ownN, granted, r.ot, r.gen, 0
  local ne = nres + 6
  nres = ne
  if untl then
    local last = untl - 1
    if r.hi < last then last = r.hi end
    for b = r.lo, last do
      local v = getslot(r, b)
      if v ~= 0 then
        res[ne] = res[ne] + 1
        res[nres + 1], res[nres + 2] = b, v
        nres = nres + 2
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

// counterCentralScript: KEYS = c, w, o; ARGV = b0, R, limit, ttl, now (ms),
// bnow, gw, n, deadline (µs, 0: none), own (0 or 1), id, epoch (20
// digits), nw, then nw triples of query ID, bucket and count (withdrawals
// of the gateway's earlier queries, applied first). Returns {admitted,
// count, gen}, or {-1, 0, 0} past the deadline or for a withdrawn query. A
// query with an ID is remembered in w, so that a withdrawal can take its
// admit back.
var counterCentralScript = redis.NewScript(counterLib + counterQueryStart + `
if r.n + r.ot + n > limit then
  finish()
  return {0, r.n, r.gen}
end
if n > 0 then
  bump(r, bnow, n)
  if ARGV[10] == '1' then bump(own, bnow, n) end
  if name then
    call('HSET', KEYS[2], gw, name .. ':' .. string.format('%d', bnow) .. ':' .. n .. ':' .. ARGV[10])
    call('PEXPIRE', KEYS[2], 2 * ttl)
  end
  changed = true
end
finish()
return {1, r.n, r.gen}
`)

// counterGrantScript: KEYS = c, w, o; ARGV as counterCentralScript's.
// Returns {granted, gen}, or {-1, 0, 0} past the deadline.
var counterGrantScript = redis.NewScript(counterLib + counterQueryStart + `
local g = math.max(math.min(n, limit - r.n - r.ot), 0)
if g > 0 then
  local e, applied, out = gateway(r, tonumber(gw))
  r.ot = r.ot + g
  finish(tonumber(gw), e, applied, out + g)
else
  finish()
end
return {g, r.gen}
`)

// counterQueryStart begins the counter central check's and grant's
// scripts: the deadline, the record (and the gateway's own record when the
// query counts its own), the withdrawals; finish saves what changed, or
// the record when it is new or its expiry is due to be pushed back.
const counterQueryStart = `
local b0, R, limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local nowms, bnow, gw, n = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
if expired(ARGV[9]) then return {-1, 0, 0} end
local id = tonumber(ARGV[11])
local name
if id > 0 then
  name = centralName(gw, ARGV[12], id)
  if call('HEXISTS', KEYS[2], 'x:' .. name) == 1 then return {-1, 0, 0} end
end
local r = load(KEYS[1], R, b0)
advance(r, b0)
local own
if ARGV[10] == '1' or tonumber(ARGV[13]) > 0 then
  own = load(KEYS[3], R, b0)
  advance(own, b0)
end
local changed = false
for i = 1, tonumber(ARGV[13]) do
  local q = 13 + 3 * (i - 1)
  withdraw(r, own, KEYS[2], gw, ARGV[12], tonumber(ARGV[q + 1]), tonumber(ARGV[q + 2]), tonumber(ARGV[q + 3]), ttl)
  changed = true
end
local function finish(...)
  if changed or select('#', ...) > 0 or r.new or nowms - r.renewed > ttl then save(r, nowms, ttl, ...) end
  if own and changed then save(own, nowms, ttl) end
end
`

// counterKeys returns the Redis keys of a counted key: its record, its
// hash of central admits and gateway gw's own record.
func (s *Store) counterKeys(name string, gw int) []string {
	tag := s.prefix + "{" + name + "}"
	return []string{tag + ":c", tag + ":w", tag + ":o:" + strconv.Itoa(gw)}
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
	args := []any{sp.FirstBucket(sp.Lo(now)), ring(sp), ttl, floorDiv(now, 1e6), until, pu.Gateway, wantOwn, len(pu.Gone)}
	for _, g := range pu.Gone {
		args = append(args, g)
	}
	return args
}

// counterKeyArg packs one key's part of a counter sync: its limit, the
// push's numbering and ask, its admits as runs of one bucket and one count,
// its withdrawals and its re-seed.
func counterKeyArg(k store.Key, pu store.Push) string {
	var r store.Repair
	if pu.Repair != nil {
		r = *pu.Repair
	}
	b := make([]byte, 0, 48+16*len(pu.Admits)+20*len(r.Withdraw)+12*len(r.Reseed))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(k.Limit)))
	b = appendFloat(b, float64(pu.Seq))
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
		b = appendFloat(b, float64(bk))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(j-i)))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(c)))
		groups++
		i = j
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(int32(groups)))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(len(r.Withdraw))))
	for _, w := range r.Withdraw {
		b = appendFloat(b, float64(w.ID))
		b = appendFloat(b, float64(sp.Bucket(w.At)))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(w.N)))
	}
	b = appendFloat(b, float64(r.ReseedID))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(len(r.Reseed))))
	for i, t := range r.Reseed {
		b = appendFloat(b, float64(sp.Bucket(t)))
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(store.CountAt(r.ReseedCounts, i))))
	}
	return string(b)
}

// appendFloat appends f as Lua's struct.pack writes a "d".
func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// counterPull reads one key's answer of the counter sync script (count,
// own, granted, outstanding, gen, e, then e pairs of bucket and count) and
// returns the rest.
func counterPull(vals []int64, sp window.Spec) (store.Pull, []int64, error) {
	if len(vals) < pullFixed || len(vals) < pullFixed+2*int(vals[pullFixed-1]) {
		return store.Pull{}, nil, fmt.Errorf("counter sync answered %v", vals)
	}
	pull := store.Pull{Count: int(vals[0]), Own: int(vals[1]), Granted: int(vals[2]), Outstanding: int(vals[3]), Gen: uint64(vals[4])}
	m := int(vals[pullFixed-1])
	if m > 0 {
		pull.Expiring = make([]int64, m)
		counts := make([]int, m)
		heavy := false
		for j := range m {
			pull.Expiring[j] = sp.BucketStamp(vals[pullFixed+2*j])
			counts[j] = int(vals[pullFixed+1+2*j])
			heavy = heavy || counts[j] > 1
		}
		if heavy {
			pull.ExpiringCounts = counts
		}
	}
	return pull, vals[pullFixed+2*m:], nil
}

// askCounted is Ask for a counted key: the central check or a grant, after
// the push the query carries.
func (s *Store) askCounted(ctx context.Context, now int64, k store.Key, gw int, q store.Query) (store.Answer, error) {
	sc, err := scriptFor(q.Kind, counterCentralScript, counterGrantScript)
	if err != nil {
		return store.Answer{}, err
	}
	own := 0
	var call store.Call
	if q.Call != nil {
		call = *q.Call
	}
	if call.Own {
		own = 1
	}
	args := append(counterHead(now, k, 0), gw, q.N, deadlineOf(ctx), own, call.ID, fmt.Sprintf("%020d", call.Epoch), len(call.Withdraw))
	for _, w := range call.Withdraw {
		args = append(args, w.ID, k.Window.Bucket(w.At), w.N)
	}
	keys := s.counterKeys(k.Name, gw)
	var c *redis.Cmd
	if carries(q) {
		pu := *q.Carry
		pu.Ask, pu.Horizon = 0, 0
		push := append(counterShared(now, k.Window, pu), counterKeyArg(k, pu))
		c = s.carried(ctx, keys, counterSyncScript, push, sc, args)
	} else {
		c = sc.Run(ctx, s.rdb, keys, args...)
	}
	return answerOf(c, k, q)
}
