package redisstore

import "github.com/redis/go-redis/v9"

// Each rate-limited key lives in two Redis keys that share a hash tag, so
// that they sit in one Cluster slot:
//
//	z  a sorted set: one member per admitted request still in the window,
//	   score = its time in microseconds, member = "gw:epoch:seq" (pushed admits),
//	   "gw:uN" (pushes without sequence numbers) or "gw:cN" (central
//	   admits), unique per admit
//	h  a hash: "o:gw" the lease slots gw holds, "ot" their total, "c" a
//	   counter for members without sequence numbers
//
// A retried push adds the same members again, which changes nothing: that is
// what makes syncs idempotent here (memstore keeps sequence numbers instead).
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
local function trim(z, lo)
  redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. lo)
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
// 1), n, epoch, then n stamps (µs). It returns, for each key: count, own (0 unless
// wanted), granted, m, then m expiring stamps.
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
  trim(z, lo_s)
  if n > 0 then
    local base, tag = seq, ARGV[p + 11] .. ':'
    if seq <= 0 then
      base, tag = redis.call('HINCRBY', h, 'c', n) - n + 1, 'u'
    end
    local args = {}
    for i = 1, n do
      local ts = ARGV[p + 11 + i]
      if tonumber(ts) >= lo then
        args[#args + 1] = ts
        args[#args + 1] = gw .. ':' .. tag .. (base + i - 1)
      end
      if #args >= 7000 then
        redis.call('ZADD', z, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', z, unpack(args)) end
  end
  local out = tonumber(redis.call('HGET', h, 'o:' .. gw) or '0')
  if out ~= 0 then
    redis.call('HSET', h, 'o:' .. gw, 0)
    redis.call('HINCRBY', h, 'ot', -out)
  end
  local count = redis.call('ZCARD', z)
  local granted = 0
  if ask > 0 then granted = grant(h, limit, gw, ask, count) end
  local own = 0
  if wantOwn then
    local prefix = gw .. ':'
    for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do
      if string.sub(m, 1, #prefix) == prefix then own = own + 1 end
    end
  end
  res[#res + 1] = count
  res[#res + 1] = own
  res[#res + 1] = granted
  if tonumber(untl_s) > 0 then
    local e = redis.call('ZRANGE', z, lo_s, '(' .. untl_s, 'BYSCORE', 'WITHSCORES')
    res[#res + 1] = #e / 2
    for i = 2, #e, 2 do res[#res + 1] = e[i] end
  else
    res[#res + 1] = 0
  end
  touch(z, h, ttl)
  p = p + 11 + n
end
return res
`)

// centralScript: KEYS = z, h; ARGV = lo, limit, ttl, now, gw, n, deadline.
// Returns {admitted, count}, or {-1, 0} past the deadline.
var centralScript = redis.NewScript(lib + `
local z, h = KEYS[1], KEYS[2]
local limit, ttl, now, gw, n = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
if expired(ARGV[7]) then return {-1, 0} end
trim(z, ARGV[1])
local count = redis.call('ZCARD', z)
if count + outstanding(h) + n > limit then
  return {0, count}
end
local c = redis.call('HINCRBY', h, 'c', n)
local args = {}
for i = 1, n do
  args[#args + 1] = now
  args[#args + 1] = gw .. ':c' .. (c - n + i)
end
redis.call('ZADD', z, unpack(args))
touch(z, h, ttl)
return {1, count + n}
`)

// grantScript: KEYS = z, h; ARGV = lo, limit, ttl, now, gw, n, deadline.
// Returns the slots granted, or -1 past the deadline.
var grantScript = redis.NewScript(lib + `
local z, h = KEYS[1], KEYS[2]
if expired(ARGV[7]) then return -1 end
trim(z, ARGV[1])
local g = grant(h, tonumber(ARGV[2]), ARGV[5], tonumber(ARGV[6]), redis.call('ZCARD', z))
touch(z, h, tonumber(ARGV[3]))
return g
`)
