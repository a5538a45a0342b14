package redisstore

import "github.com/redis/go-redis/v9"

// Each rate-limited key lives in two Redis keys that share a hash tag, so
// that they sit in one Cluster slot:
//
//	z  a sorted set: one member per admit still in the window, score = its
//	   time in microseconds, member = "gw:epoch:seq" (pushed admits),
//	   "gw:uN" (pushes without sequence numbers), "gw:epoch:cID" (central
//	   admits of a query that named itself), "gw:cN" (other central
//	   admits) or "gw:epoch:rR:i" (re-seeded admits), unique per admit,
//	   with "*n" appended when the admit stands for n > 1 requests (a
//	   request of cost n is one member)
//	h  a hash: "n" the requests z stands for, "o:gw" the lease slots gw
//	   holds, "ot" their total, "c" a counter for members without sequence
//	   numbers, "g" the key's life (Pull.Gen: Redis's clock in µs when
//	   the hash was made), and "x:gw:epoch:cID" for each withdrawn central
//	   admit that had not reached the log (it never may)
//
// A retried push adds the same members again, which changes nothing: that is
// what makes syncs idempotent here (memstore keeps sequence numbers instead).
// "n" moves with z: a member's count is added when ZADD really adds it, and
// taken off when the window trims it.
//
// A call the caller waits on (the central check, a grant) carries the
// caller's deadline, and does nothing once Redis's clock has passed it: a
// call that reaches a paused or slow Redis after the caller gave up and told
// its client "rejected" must not admit or grant after all. This assumes the
// clocks of the gateways and Redis agree to well within the store timeout
// (NTP), as the windows already do.
//
// Both expire ttl ms after the last call that read or wrote them (ttl is
// more than the window), so a key nobody uses leaves nothing behind, a
// crashed gateway's lease slots are freed, and a key a gateway heard of
// less than a window ago is never made anew unless Redis lost it: that is
// what lets a gateway tell, by "g", that Redis forgot a window. Times are
// passed on as the strings they came in: Lua prints big numbers to 14 digits.

// lib holds the helpers every script uses.
const lib = `
local function weight(m)
  local w = string.match(m, '%*(%d+)$')
  if w then return tonumber(w) end
  return 1
end
local function count(h)
  return tonumber(redis.call('HGET', h, 'n') or '0')
end
local function trim(z, h, lo)
  local old = redis.call('ZRANGE', z, '-inf', '(' .. lo, 'BYSCORE')
  if #old == 0 then return end
  local sum = 0
  for _, m in ipairs(old) do sum = sum + weight(m) end
  redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. lo)
  redis.call('HINCRBY', h, 'n', -sum)
end
-- add adds members ms with scores ss to z, and their counts to "n", leaving
-- out the members z already holds: a retried push adds nothing.
local function add(z, h, ss, ms)
  if #ms == 0 then return end
  local have = redis.call('ZMSCORE', z, unpack(ms))
  local args, sum = {}, 0
  for i = 1, #ms do
    if not have[i] then
      args[#args + 1] = ss[i]
      args[#args + 1] = ms[i]
      sum = sum + weight(ms[i])
    end
    if #args >= 7000 then
      redis.call('ZADD', z, unpack(args))
      args = {}
    end
  end
  if #args > 0 then redis.call('ZADD', z, unpack(args)) end
  if sum ~= 0 then redis.call('HINCRBY', h, 'n', sum) end
end
-- member names an admit that stands for w requests.
local function member(name, w)
  if w > 1 then return name .. '*' .. w end
  return name
end
local function touch(z, h, ttl)
  redis.call('PEXPIRE', z, ttl)
  redis.call('PEXPIRE', h, ttl)
end
-- gen returns the key's life, making one (Redis's clock in µs) when the
-- hash has none: a new key, or one Redis lost.
local function gen(h)
  local g = redis.call('HGET', h, 'g')
  if g then return tonumber(g) end
  local t = redis.call('TIME')
  g = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('HSET', h, 'g', g)
  return g
end
-- withdraw takes back central admit base (of w requests) if z logged it,
-- or bars it from z for good.
local function withdraw(z, h, base, w)
  local m = member(base, w)
  if redis.call('ZSCORE', z, m) then
    redis.call('ZREM', z, m)
    redis.call('HINCRBY', h, 'n', -w)
  else
    redis.call('HSET', h, 'x:' .. base, 1)
  end
end
local function outstanding(h)
  return tonumber(redis.call('HGET', h, 'ot') or '0')
end
-- expired reports whether Redis's clock has passed the caller's deadline
-- (µs, 0 for none): the caller has given up, so the call must change nothing.
local function expired(deadline)
  deadline = tonumber(deadline)
  if deadline == 0 then return false end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]) > deadline
end
-- refusals returns the central checks with a spare refused for a full
-- window in window-long epoch e and the one before ("f1", "f0" as of epoch
-- "fe"), rolled on to e.
local function refusals(h, e)
  local s = redis.call('HMGET', h, 'fe', 'f0', 'f1')
  local fe, f0, f1 = tonumber(s[1] or '0'), tonumber(s[2] or '0'), tonumber(s[3] or '0')
  if e - fe == 1 then return f1, 0 end
  if e ~= fe then return 0, 0 end
  return f0, f1
end
local function refuse(h, e, n)
  local f0, f1 = refusals(h, e)
  redis.call('HSET', h, 'fe', e, 'f0', f0, 'f1', f1 + (n or 1))
end
-- erfc and worth are slotworth.Of's: the chance that n or more
-- requests reach a gateway of rate r (mean r/1000 per interval).
local function erfc(x)
  if x < 0 then return 2 - erfc(-x) end
  local t = 1 / (1 + 0.3275911 * x)
  local poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
  return poly * math.exp(-x * x)
end
local function worth(r, n)
  local l = r / 1000
  if n <= 0 then return 1 end
  if l > 30 then return erfc((n - 0.5 - l) / math.sqrt(2 * l)) / 2 end
  local term, below = math.exp(-l), 0
  for i = 0, n - 1 do
    below = below + term
    term = term * l / (i + 1)
  end
  return 1 - below
end
-- ranked is memstore's: how many of gw's ask slots to grant of avail,
-- leaving those other gateways asked for ("w:gw") and do not hold ("o:gw")
-- while each is worth more, by binary searches; gw's slots counted on from
-- from.
local function ranked(h, gw, ask, avail, from)
  local all = redis.call('HGETALL', h)
  local out, rate, want = {}, {}, {}
  for i = 1, #all, 2 do
    local f, j = string.sub(all[i], 1, 2), string.sub(all[i], 3)
    if f == 'o:' then out[j] = tonumber(all[i + 1])
    elseif f == 'r:' then rate[j] = tonumber(all[i + 1])
    elseif f == 'w:' then want[j] = tonumber(all[i + 1]) end
  end
  local me, lack = tonumber(gw), 0
  for j, wj in pairs(want) do
    if j ~= gw then lack = lack + math.max(wj - (out[j] or 0), 0) end
  end
  local claims = function(v)
    local c = 0
    for j, wj in pairs(want) do
      local oj = out[j] or 0
      if j ~= gw and wj > oj then
        local lo, hi = 0, wj - oj -- the first of the lacking slots that does not claim
        while lo < hi do
          local m = math.floor((lo + hi) / 2)
          local w = worth(rate[j] or 0, oj + 1 + m)
          if w < v or (w == v and tonumber(j) > me) then hi = m else lo = m + 1 end
        end
        c = c + lo
      end
    end
    return c
  end
  local lo, hi = math.max(math.min(ask, avail - lack), 0), math.min(ask, avail)
  while lo < hi do
    local g = math.floor((lo + hi + 1) / 2)
    if g + claims(worth(rate[gw] or 0, from + g)) <= avail then lo = g else hi = g - 1 end
  end
  return lo
end
-- give grants gw up to ask of avail slots; with a spare, none while the
-- key is contended in epoch e, and ranked, gw's counted on from from.
local function give(h, gw, ask, avail, spare, e, from)
  if spare > 0 then
    local f0, f1 = refusals(h, e)
    if f0 + f1 >= math.max(2 * spare, 2) then return 0 end
    ask = ranked(h, gw, ask, avail, from)
  end
  local g = math.min(ask, avail)
  if g <= 0 then return 0 end
  redis.call('HINCRBY', h, 'o:' .. gw, g)
  redis.call('HINCRBY', h, 'ot', g)
  return g
end
-- grant gives gw up to ask slots within the limit; with a spare, within
-- the limit plus spare, ranked, while the key is not contended in epoch e,
-- and none while it is.
local function grant(h, limit, gw, ask, count, spare, e)
  local avail = limit - count - outstanding(h)
  if spare > 0 then avail = avail + spare end
  return give(h, gw, ask, avail, spare, e, 0)
end
-- topUp is memstore's: up to ask slots for gw after its central admit,
-- within the limit; with a spare, none while the key is contended, and
-- ranked, gw's counted on from those it holds.
local function topUp(h, limit, gw, ask, count, spare, e)
  local avail = limit - count - outstanding(h)
  if avail <= 0 then return 0 end
  return give(h, gw, ask, avail, spare, e, tonumber(redis.call('HGET', h, 'o:' .. gw) or '0'))
end
`

// syncScript syncs any number of keys (of one slot, on a Cluster). KEYS are
// z1, h1, z2, h2, ...; ARGV holds, for each key in turn: lo, limit, ttl,
// now, gw, seq, ask, until (0: no expiring stamps wanted), want own (0 or
// 1), n, epoch, g, w, r, rid, spare, rate, e (the window-long epoch of now,
// for the spare's refusals), refused (Push.Refused); then g gone gateways (whose lease slots are
// settled), n pairs of stamp (µs) and count (the admits), w pairs of query
// ID and count (the withdrawals, applied first) and r pairs of stamp and
// count (a re-seed, numbered rid). It returns, for each key: count, own (0
// unless wanted), granted, outstanding, gen, m, then m pairs of expiring
// stamp and count.
var syncScript = redis.NewScript(lib + `
local res = {}
local p = 0
for k = 1, #KEYS, 2 do
  local z, h = KEYS[k], KEYS[k + 1]
  local lo_s = ARGV[p + 1]
  local lo, limit, ttl = tonumber(lo_s), tonumber(ARGV[p + 2]), tonumber(ARGV[p + 3])
  local gw, seq, ask = ARGV[p + 5], tonumber(ARGV[p + 6]), tonumber(ARGV[p + 7])
  local untl_s = ARGV[p + 8]
  local wantOwn = ARGV[p + 9] == '1'
  local n, epoch = tonumber(ARGV[p + 10]), ARGV[p + 11]
  local g, nw, nr = tonumber(ARGV[p + 12]), tonumber(ARGV[p + 13]), tonumber(ARGV[p + 14])
  local rid = ARGV[p + 15]
  local spare, rate, e = tonumber(ARGV[p + 16]), ARGV[p + 17], tonumber(ARGV[p + 18])
  local refused = tonumber(ARGV[p + 19])
  local life = gen(h)
  for i = 1, g do
    local d = ARGV[p + 19 + i]
    local o = tonumber(redis.call('HGET', h, 'o:' .. d) or '0')
    if o ~= 0 and d ~= gw then
      redis.call('HSET', h, 'o:' .. d, 0)
      redis.call('HINCRBY', h, 'ot', -o)
    end
  end
  local q = p + 19 + g
  trim(z, h, lo_s)
  for i = 1, nw do
    local at = q + 2 * n + 2 * i
    withdraw(z, h, gw .. ':' .. epoch .. ':c' .. ARGV[at - 1], tonumber(ARGV[at]))
  end
  if n > 0 then
    local base, tag = seq, epoch .. ':'
    if seq <= 0 then
      base, tag = redis.call('HINCRBY', h, 'c', n) - n + 1, 'u'
    end
    local ss, ms = {}, {}
    for i = 1, n do
      local ts = ARGV[q + 2 * i - 1]
      if tonumber(ts) >= lo then
        ss[#ss + 1] = ts
        ms[#ms + 1] = member(gw .. ':' .. tag .. (base + i - 1), tonumber(ARGV[q + 2 * i]))
      end
    end
    add(z, h, ss, ms)
  end
  if nr > 0 then
    local ss, ms = {}, {}
    local r0 = q + 2 * n + 2 * nw
    for i = 1, nr do
      local ts = ARGV[r0 + 2 * i - 1]
      if tonumber(ts) >= lo then
        ss[#ss + 1] = ts
        ms[#ms + 1] = member(gw .. ':' .. epoch .. ':r' .. rid .. ':' .. i, tonumber(ARGV[r0 + 2 * i]))
      end
    end
    add(z, h, ss, ms)
  end
  local out = tonumber(redis.call('HGET', h, 'o:' .. gw) or '0')
  if out ~= 0 then
    redis.call('HSET', h, 'o:' .. gw, 0)
    redis.call('HINCRBY', h, 'ot', -out)
  end
  local c = count(h)
  local granted = 0
  if spare > 0 and refused > 0 then refuse(h, e, refused) end
  if spare > 0 then redis.call('HSET', h, 'r:' .. gw, rate, 'w:' .. gw, ask) end
  if ask > 0 then granted = grant(h, limit, gw, ask, c, spare, e) end
  local own = 0
  if wantOwn then
    local prefix = gw .. ':'
    for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do
      if string.sub(m, 1, #prefix) == prefix then own = own + weight(m) end
    end
  end
  res[#res + 1] = c
  res[#res + 1] = own
  res[#res + 1] = granted
  res[#res + 1] = outstanding(h)
  res[#res + 1] = life
  if tonumber(untl_s) > 0 then
    local e = redis.call('ZRANGE', z, lo_s, '(' .. untl_s, 'BYSCORE', 'WITHSCORES')
    res[#res + 1] = #e / 2
    for i = 1, #e, 2 do
      res[#res + 1] = e[i + 1]
      res[#res + 1] = weight(e[i])
    end
  else
    res[#res + 1] = 0
  end
  touch(z, h, ttl)
  p = p + 19 + g + 2 * n + 2 * nw + 2 * nr
end
return res
`)

// centralScript: KEYS = z, h; ARGV = lo, limit, ttl, now, gw, n, deadline,
// id, epoch, w, then w pairs of query ID and count (withdrawals of the
// gateway's earlier queries, applied first), then top-up (store.Query.TopUp),
// spare and e (the window-long epoch of now). Returns {admitted, count,
// gen, granted}, or {-1, 0, 0} past the deadline or for a withdrawn query. A query
// with an ID logs its admit as "gw:epoch:cID", which a withdrawal can name;
// the others as "gw:cN".
var centralScript = redis.NewScript(lib + queryStart + `
touch(z, h, ttl)
if c + n > limit or c + ot + n > limit + spare then
  if spare > 0 and n > 0 and c + n > limit then refuse(h, e) end
  return {0, c, life, 0}
end
if n > 0 then
  if not base then base = gw .. ':c' .. redis.call('HINCRBY', h, 'c', 1) end
  add(z, h, {now}, {member(base, n)})
end
local topup, g = tonumber(ARGV[#ARGV - 2]), 0
if topup > 0 then g = topUp(h, limit, gw, topup, c + n, spare, e) end
return {1, c + n, life, g}
`)

// grantScript: KEYS = z, h; ARGV as centralScript's (the top-up unread).
// Returns {granted, gen}, or {-1, 0, 0} past the deadline.
var grantScript = redis.NewScript(lib + queryStart + `
local g = grant(h, limit, gw, n, c, spare, e)
touch(z, h, ttl)
return {g, life}
`)

// queryStart begins the central check's and the grant's scripts: the
// deadline, the withdrawals and the window; then c, ot and life, the
// count, the slots outstanding and the key's life, read in one call (each
// call from a script costs Redis about a microsecond, docs/performance.md).
const queryStart = `
local z, h = KEYS[1], KEYS[2]
local limit, ttl, now, gw, n = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
local spare, e = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
if expired(ARGV[7]) then return {-1, 0, 0} end
trim(z, h, ARGV[1])
for i = 1, tonumber(ARGV[10]) do
  withdraw(z, h, gw .. ':' .. ARGV[9] .. ':c' .. ARGV[9 + 2 * i], tonumber(ARGV[10 + 2 * i]))
end
local base
if tonumber(ARGV[8]) > 0 then base = gw .. ':' .. ARGV[9] .. ':c' .. ARGV[8] end
-- one read: the count, the key's life, the slots outstanding, and whether
-- this query was withdrawn before it came
local st = redis.call('HMGET', h, 'n', 'g', 'ot', 'x:' .. (base or ''))
if st[4] then return {-1, 0, 0} end
local c, ot = tonumber(st[1] or '0'), tonumber(st[3] or '0')
local life = tonumber(st[2]) or gen(h)
`
