package redisstore

import "github.com/redis/go-redis/v9"

// Each rate-limited key lives in two Redis keys that share a hash tag, so
// that they sit in one Cluster slot:
//
//	z  a sorted set: one member per admit still in the window, score = its
//	   time in microseconds, member = "gw:epoch:seq" (pushed admits),
//	   "gw:uN" (pushes without sequence numbers) or "gw:cN" (central
//	   admits), unique per admit, with "*n" appended when the admit stands
//	   for n > 1 requests (a request of cost n is one member)
//	h  a hash: "n" the requests z stands for, "o:gw" the lease slots gw
//	   holds, "ot" their total, "c" a counter for members without sequence
//	   numbers
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
// Both expire ttl ms after the last write, so a key nobody uses leaves
// nothing behind, and a crashed gateway's lease slots are freed. Times are
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
local function grant(h, limit, gw, ask, count)
  local g = math.min(ask, limit - count - outstanding(h))
  if g <= 0 then return 0 end
  redis.call('HINCRBY', h, 'o:' .. gw, g)
  redis.call('HINCRBY', h, 'ot', g)
  return g
end
`

// syncScript syncs any number of keys (of one slot, on a Cluster). KEYS are
// z1, h1, z2, h2, ...; ARGV holds, for each key in turn: lo, limit, ttl,
// now, gw, seq, ask, until (0: no expiring stamps wanted), want own (0 or
// 1), n, epoch, g, then g gone gateways (whose lease slots are settled),
// then n pairs of stamp (µs) and count. It returns, for each
// key: count, own (0 unless wanted), granted, m, then m pairs of expiring
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
  local n = tonumber(ARGV[p + 10])
  local g = tonumber(ARGV[p + 12])
  for i = 1, g do
    local d = ARGV[p + 12 + i]
    local o = tonumber(redis.call('HGET', h, 'o:' .. d) or '0')
    if o ~= 0 and d ~= gw then
      redis.call('HSET', h, 'o:' .. d, 0)
      redis.call('HINCRBY', h, 'ot', -o)
    end
  end
  local q = p + g + 1
  trim(z, h, lo_s)
  if n > 0 then
    local base, tag = seq, ARGV[p + 11] .. ':'
    if seq <= 0 then
      base, tag = redis.call('HINCRBY', h, 'c', n) - n + 1, 'u'
    end
    local ss, ms = {}, {}
    for i = 1, n do
      local ts = ARGV[q + 10 + 2 * i]
      if tonumber(ts) >= lo then
        ss[#ss + 1] = ts
        ms[#ms + 1] = member(gw .. ':' .. tag .. (base + i - 1), tonumber(ARGV[q + 11 + 2 * i]))
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
  if ask > 0 then granted = grant(h, limit, gw, ask, c) end
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
  p = p + 12 + g + 2 * n
end
return res
`)

// centralScript: KEYS = z, h; ARGV = lo, limit, ttl, now, gw, n, deadline.
// Returns {admitted, count}, or {-1, 0} past the deadline.
var centralScript = redis.NewScript(lib + `
local z, h = KEYS[1], KEYS[2]
local limit, ttl, now, gw, n = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
if expired(ARGV[7]) then return {-1, 0} end
trim(z, h, ARGV[1])
local c = count(h)
if c + outstanding(h) + n > limit then
  return {0, c}
end
if n > 0 then
  local id = redis.call('HINCRBY', h, 'c', 1)
  add(z, h, {now}, {member(gw .. ':c' .. id, n)})
end
touch(z, h, ttl)
return {1, c + n}
`)

// grantScript: KEYS = z, h; ARGV = lo, limit, ttl, now, gw, n, deadline.
// Returns the slots granted, or -1 past the deadline.
var grantScript = redis.NewScript(lib + `
local z, h = KEYS[1], KEYS[2]
if expired(ARGV[7]) then return -1 end
trim(z, h, ARGV[1])
local g = grant(h, tonumber(ARGV[2]), ARGV[5], tonumber(ARGV[6]), count(h))
touch(z, h, tonumber(ARGV[3]))
return g
`)
