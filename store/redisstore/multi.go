package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fleetlimit/fleetlimit/store"
)

// errPartCounters refuses window buckets on a key with several limits.
var errPartCounters = errors.New("redisstore: a key with several limits counts in exact logs here: window buckets are not supported on it")

// multiScript answers the central checks and grants of one decision on a
// key with several limits (store.MultiAsker). KEYS = z1, h1, z2, h2, ... of
// the parts that ask; ARGV = now, gw, deadline, then for each part: kind (1
// central, 2 grant), lo, limit, ttl, n, id, epoch, spare, e (the
// window-long epoch of now), w, and w pairs of query ID and count
// (withdrawals, applied first). The central checks log their
// admits only if every one fits. Returns {admitted or granted, count, gen}
// for each part, or {-1} past the deadline or for a withdrawn query.
var multiScript = redis.NewScript(lib + `
if expired(ARGV[3]) then return {-1} end
local now, gw = ARGV[1], ARGV[2]
local st, all, p = {}, true, 3
for k = 1, #KEYS, 2 do
  local z, h = KEYS[k], KEYS[k + 1]
  local it = {z = z, h = h, kind = tonumber(ARGV[p + 1]), limit = tonumber(ARGV[p + 3]), ttl = tonumber(ARGV[p + 4]), n = tonumber(ARGV[p + 5])}
  local id, epoch, w = tonumber(ARGV[p + 6]), ARGV[p + 7], tonumber(ARGV[p + 10])
  it.spare, it.e = tonumber(ARGV[p + 8]), tonumber(ARGV[p + 9])
  trim(z, h, ARGV[p + 2])
  for i = 1, w do
    withdraw(z, h, gw .. ':' .. epoch .. ':c' .. ARGV[p + 9 + 2 * i], tonumber(ARGV[p + 10 + 2 * i]))
  end
  if id > 0 then it.base = gw .. ':' .. epoch .. ':c' .. id end
  local s = redis.call('HMGET', h, 'n', 'g', 'ot', 'x:' .. (it.base or ''))
  if s[4] and it.kind == 1 then return {-1} end
  it.c, it.ot = tonumber(s[1] or '0'), tonumber(s[3] or '0')
  it.life = tonumber(s[2]) or gen(h)
  if it.kind == 1 and (it.c + it.n > it.limit or it.c + it.ot + it.n > it.limit + it.spare) then all = false end
  st[#st + 1] = it
  p = p + 10 + 2 * w
end
local res = {}
for _, it in ipairs(st) do
  touch(it.z, it.h, it.ttl)
  if it.kind == 2 then
    res[#res + 1] = grant(it.h, it.limit, gw, it.n, it.c, it.spare, it.e)
    res[#res + 1] = it.c
  elseif all then
    if it.n > 0 then
      local base = it.base or (gw .. ':c' .. redis.call('HINCRBY', it.h, 'c', 1))
      add(it.z, it.h, {now}, {member(base, it.n)})
    end
    res[#res + 1] = 1
    res[#res + 1] = it.c + it.n
  else
    if it.kind == 1 and it.spare > 0 and it.n > 0 and it.c + it.n > it.limit then refuse(it.h, it.e) end
    res[#res + 1] = 0
    res[#res + 1] = it.c
  end
  res[#res + 1] = it.life
end
return res
`)

// multiCounterScript is the counter queries of one decision on a key with
// several limits: KEYS = each part's counter; ARGV = n, then each part's
// limit, then each one's expiry in seconds. A counter adds n when every
// counter takes it within its limit, or when its own limit is passed.
// Returns each counter afterwards.
var multiCounterScript = redis.NewScript(`
local n, m = tonumber(ARGV[1]), #KEYS
local cs, fits = {}, true
for i = 1, m do
  cs[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  if cs[i] + n > tonumber(ARGV[1 + i]) then fits = false end
end
local res = {}
for i = 1, m do
  if fits or cs[i] + n > tonumber(ARGV[1 + i]) then
    res[i] = redis.call('INCRBY', KEYS[i], n)
    redis.call('EXPIRE', KEYS[i], ARGV[1 + m + i])
  else
    res[i] = cs[i]
  end
end
return res
`)

var _ store.MultiAsker = (*Store)(nil)

// AskAll answers the queries of one decision on a key with several limits in
// one round trip (store.MultiAsker): one script over the parts' logs, after
// the pushes the queries carry (pipelined with it), or one over their
// counters. Its parts share a hash tag, so a Cluster takes it too.
func (s *Store) AskAll(ctx context.Context, now int64, gw int, items []store.AskItem) error {
	var asking []int
	counters := false
	for i := range items {
		it := &items[i]
		it.Answer = store.Answer{}
		switch {
		case it.Query.Kind == 0:
			continue
		case it.Key.Window.Counters():
			return errPartCounters
		case it.Query.Kind == store.QueryCounter:
			counters = true
		}
		asking = append(asking, i)
	}
	if len(asking) == 0 {
		return nil
	}
	if counters {
		return s.multiCounter(ctx, now, items, asking)
	}
	return s.multiLog(ctx, now, gw, items, asking)
}

// multiLog runs multiScript for the parts that ask, with their carried
// pushes first, in one pipeline.
func (s *Store) multiLog(ctx context.Context, now int64, gw int, items []store.AskItem, asking []int) error {
	var keys, pushKeys []string
	var pushes [][]any
	args := []any{us(now), gw, deadlineOf(ctx)}
	for _, i := range asking {
		it := &items[i]
		q, ks := it.Query, s.keysOf(it.Key)
		kind := 1
		switch q.Kind {
		case store.QueryGrant:
			kind = 2
		case store.QueryCentral:
		default:
			return fmt.Errorf("redisstore: %v of %q beside other limits' queries", q.Kind, it.Key.Name)
		}
		var call store.Call
		if q.Call != nil {
			call = *q.Call
		}
		args = append(append(args, kind), head(now, it.Key, 0)...)
		args = append(args, q.N, call.ID, call.Epoch, q.Spare, epochOf(now, it.Key), len(call.Withdraw))
		for _, w := range call.Withdraw {
			args = append(args, w.ID, w.N)
		}
		keys = append(keys, ks...)
		if carries(q) {
			pu := *q.Carry
			pu.Ask, pu.Horizon, pu.WantOwn = 0, 0, false
			pushKeys = append(pushKeys, ks...)
			pushes = append(pushes, syncArgs(nil, now, it.Key, pu))
		}
	}
	c, err := s.pipelined(ctx, func(p redis.Pipeliner) *redis.Cmd {
		for j, push := range pushes {
			syncScript.EvalSha(ctx, p, pushKeys[2*j:2*j+2], push...)
		}
		return multiScript.EvalSha(ctx, p, keys, args...)
	})
	if err != nil {
		return err
	}
	vals, err := c.Int64Slice()
	if err != nil {
		return err
	}
	if len(vals) > 0 && vals[0] < 0 {
		return errExpired
	}
	if len(vals) != 3*len(asking) {
		return fmt.Errorf("redisstore: several limits of %q answered %v", items[asking[0]].Key.Name, vals)
	}
	for j, i := range asking {
		v := vals[3*j : 3*j+3]
		if items[i].Query.Kind == store.QueryGrant {
			items[i].Answer = store.Answer{Granted: int(v[0]), Gen: uint64(v[2])}
			continue
		}
		items[i].Answer = store.Answer{Admit: v[0] == 1, Count: int(v[1]), Gen: uint64(v[2])}
	}
	return nil
}

// multiCounter runs multiCounterScript over the counters of the parts that
// ask.
func (s *Store) multiCounter(ctx context.Context, now int64, items []store.AskItem, asking []int) error {
	keys := make([]string, 0, len(asking))
	limits, expiry := []any{}, []any{}
	n := items[asking[0]].Query.N
	for _, i := range asking {
		k := items[i].Key
		if items[i].Query.Kind != store.QueryCounter || items[i].Query.N != n {
			return fmt.Errorf("redisstore: counter queries of %q beside other kinds or costs", k.Name)
		}
		keys = append(keys, CounterKey(partCounterName(k), now, k))
		limits = append(limits, k.Limit)
		expiry = append(expiry, int64(k.Window.Size.Seconds()+0.999999))
	}
	c, err := s.pipelined(ctx, func(p redis.Pipeliner) *redis.Cmd {
		return multiCounterScript.EvalSha(ctx, p, keys, append(append([]any{n}, limits...), expiry...)...)
	})
	if err != nil {
		return err
	}
	vals, err := c.Int64Slice()
	if err != nil {
		return err
	}
	if len(vals) != len(asking) {
		return fmt.Errorf("redisstore: counters of %q answered %v", items[asking[0]].Key.Name, vals)
	}
	for j, i := range asking {
		items[i].Answer = store.Answer{Count: int(vals[j])}
	}
	return nil
}

// partCounterName is the name of a key's counter: its own for a key with
// one limit (envoyproxy/ratelimit's layout), and for a part of a key with
// several (which upstream has not) the name under a hash tag with the
// part's number, so that one script reaches every part's counter.
func partCounterName(k store.Key) string {
	if k.Part == 0 {
		return k.Name
	}
	return "{" + k.Name + "}:" + strconv.Itoa(k.Part) + ":"
}

// pipelined sends what send queues in one round trip and returns the last
// command it queued, loading the scripts and sending again when Redis lost
// them (every script here is safe to repeat after NOSCRIPT: nothing ran).
func (s *Store) pipelined(ctx context.Context, send func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, error) {
	try := func() (*redis.Cmd, error) {
		var c *redis.Cmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			c = send(p)
			return nil
		})
		if err == nil {
			err = c.Err()
		}
		return c, err
	}
	c, err := try()
	if err != nil && isNoScript(err) {
		if err = s.load(ctx); err == nil {
			c, err = try()
		}
	}
	return c, err
}
