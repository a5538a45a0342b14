package redisstore

import "github.com/redis/go-redis/v9"

// Every script works on one key's two Redis keys, which share a hash tag so
// that they live in one Cluster slot:
//
//	KEYS[1] a sorted set: one member per admitted request still in the
//	        window, score = its time in microseconds, member = "gw:seq"
//	        (pushed admits) or "gw:cN" (central admits), unique per admit
//	KEYS[2] a hash: "a:gw" the last sequence number applied for gateway gw,
//	        "o:gw" the lease slots gw holds, "ot" their total, "c" a
//	        counter for central admits' members
//
// Both expire ttl ms after the last write, so a key nobody uses leaves
// nothing behind, and a crashed gateway's lease slots are freed.

// common trims the window and returns (count, outstanding total).
const common = `
local z, h = KEYS[1], KEYS[2]
local lo = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', z, '-inf', '(' .. ARGV[1]) -- strings: Lua prints big numbers to 14 digits
local function touch()
  redis.call('PEXPIRE', z, ttl)
  redis.call('PEXPIRE', h, ttl)
end
local function outstanding()
  return tonumber(redis.call('HGET', h, 'ot') or '0')
end
local function grant(gw, ask, count)
  local avail = limit - count - outstanding()
  local g = math.min(ask, avail)
  if g <= 0 then return 0 end
  redis.call('HINCRBY', h, 'o:' .. gw, g)
  redis.call('HINCRBY', h, 'ot', g)
  return g
end
`

// syncScript: ARGV = lo, limit, ttl, now, gw, seq, ask, until (0: no
// expiring stamps wanted), n, then n stamps (µs).
var syncScript = redis.NewScript(common + `
local gw = ARGV[5]
local seq = tonumber(ARGV[6])
local ask = tonumber(ARGV[7])
local untl = tonumber(ARGV[8])
local n = tonumber(ARGV[9])
if n > 0 then
  local first, base, tag = 1, seq, ''
  if seq > 0 then
    local done = tonumber(redis.call('HGET', h, 'a:' .. gw) or '0')
    if done >= seq then first = done - seq + 2 end
    if seq + n - 1 > done then redis.call('HSET', h, 'a:' .. gw, seq + n - 1) end
  else
    base, tag = redis.call('HINCRBY', h, 'c', n) - n + 1, 'u'
  end
  local args = {}
  for i = first, n do
    if tonumber(ARGV[9 + i]) >= lo then
      args[#args + 1] = ARGV[9 + i]
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
if ask > 0 then granted = grant(gw, ask, count) end
local own = 0
local prefix = gw .. ':'
for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do
  if string.sub(m, 1, #prefix) == prefix then own = own + 1 end
end
local res = {count, own, granted}
if untl > 0 then
  local e = redis.call('ZRANGE', z, ARGV[1], '(' .. ARGV[8], 'BYSCORE', 'WITHSCORES')
  for i = 2, #e, 2 do res[#res + 1] = e[i] end
end
touch()
return res
`)

// centralScript: ARGV = lo, limit, ttl, now, gw, n. Returns {admitted, count}.
var centralScript = redis.NewScript(common + `
local now = ARGV[4]
local gw = ARGV[5]
local n = tonumber(ARGV[6])
local count = redis.call('ZCARD', z)
if count + outstanding() + n > limit then
  return {0, count}
end
local c = redis.call('HINCRBY', h, 'c', n)
local args = {}
for i = 1, n do
  args[#args + 1] = now
  args[#args + 1] = gw .. ':c' .. (c - n + i)
end
redis.call('ZADD', z, unpack(args))
touch()
return {1, count + n}
`)

// grantScript: ARGV = lo, limit, ttl, now, gw, n. Returns the slots granted.
var grantScript = redis.NewScript(common + `
local gw = ARGV[5]
local n = tonumber(ARGV[6])
local g = grant(gw, n, redis.call('ZCARD', z))
touch()
return g
`)
