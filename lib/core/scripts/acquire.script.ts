import { defineScript } from './lua-script.js';

/**
 * Takes every key of a lock on one node, all or nothing.
 *
 * KEYS: the n lock keys, then (with fencing) their n token counter keys.
 * ARGV[1]: the lock value, ARGV[2]: the lease in ms, ARGV[3]: `1` with
 * fencing, else `0`. Optional, for a caller that will wait: ARGV[4] the meta
 * prefix, ARGV[5] how long, in ms, its place in the wait queue lives unless
 * renewed, ARGV[6] its name in the queue (`<listener id> <value>`), ARGV[7]
 * how long, in ms, the head of the queue may wait before newcomers must queue.
 * Returns `{1, 0}` when granted (with fencing `{1, 0, counter1, ...,
 * countern}`, counters as decimal strings, `"0"` when absent: they are only
 * read here and raised by `FENCE_SCRIPT` once the client holds the lock),
 * `{0, pttl}` when a key holds another value (pttl: that key's remaining
 * lease, so a waiter knows how long it may wait), `{0, -1}` when queued
 * waiters go first (see below).
 *
 * Checking all keys before writing any makes a multi-resource lock atomic on
 * the node: two callers locking overlapping sets never hold half each, so
 * they cannot deadlock. A key that already holds our own value counts as
 * granted (an earlier attempt's reply may have been lost) and is refreshed.
 * Each key is a plain `SET key value PX ttl`, so operators and other tools
 * following the SET NX convention see the holder with `GET`.
 *
 * Wait queue (only a hint, never a grant): a refused waiter records itself
 * under `<meta>q:<key>` (score: arrival, kept) and `<meta>t:<key>` (score:
 * when its place expires, renewed at each attempt), so the release script can
 * name the longest-waiting live waiter in its message and wake that one
 * instead of every waiter. Both sets expire with their last waiter; a granted
 * caller leaves them. The member names the waiter's process (its listener
 * id), so the message goes to that process alone.
 *
 * Bounded barging: a free key is refused (`{0, -1}`) to a caller that is
 * not in its live queue once the head of that queue has waited ARGV[7] ms,
 * and the caller takes its place at the back. Before that, a newcomer may
 * take it: typically the holder that just released and asks again, which
 * is already running and needs no wake-up, so letting it go on for a short
 * while keeps the lock busy; past the bound the queue is served in order,
 * so no waiter starves. Any queued waiter may take the lock (not only the
 * head), so nodes whose queues differ never block each other.
 */
export const ACQUIRE_SCRIPT = defineScript(
  'acquire',
  `
local n = #KEYS
if ARGV[3] == '1' then n = n / 2 end
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  return now
end
local function enqueue(key)
  local life = tonumber(ARGV[5])
  local q = ARGV[4] .. 'q:' .. key
  local e = ARGV[4] .. 't:' .. key
  redis.call('ZADD', q, 'NX', clock(), ARGV[6])
  redis.call('ZADD', e, clock() + life, ARGV[6])
  if redis.call('PTTL', q) < life then redis.call('PEXPIRE', q, life) end
  if redis.call('PTTL', e) < life then redis.call('PEXPIRE', e, life) end
end
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[i])
    if ARGV[4] then enqueue(KEYS[i]) end
    return {0, pttl}
  end
end
if ARGV[4] then
  for i = 1, n do
    local q = ARGV[4] .. 'q:' .. KEYS[i]
    if redis.call('EXISTS', q) == 1 and not redis.call('ZSCORE', q, ARGV[6]) then
      local e = ARGV[4] .. 't:' .. KEYS[i]
      local gone = redis.call('ZRANGEBYSCORE', e, '-inf', clock())
      for j = 1, #gone do
        redis.call('ZREM', q, gone[j])
      end
      redis.call('ZREMRANGEBYSCORE', e, '-inf', clock())
      local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
      if head[2] and clock() - tonumber(head[2]) >= tonumber(ARGV[7]) then
        enqueue(KEYS[i])
        return {0, -1}
      end
    end
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if ARGV[4] then
    redis.call('ZREM', ARGV[4] .. 'q:' .. KEYS[i], ARGV[6])
    redis.call('ZREM', ARGV[4] .. 't:' .. KEYS[i], ARGV[6])
  end
end
if n == #KEYS then return {1, 0} end
local reply = {1, 0}
for i = 1, n do
  reply[i + 2] = redis.call('GET', KEYS[n + i]) or '0'
end
return reply
`,
);
