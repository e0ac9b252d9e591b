import { defineScript } from './lua-script.js';

/**
 * Takes every key of a lock on one node, all or nothing.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the lease in ms.
 * Optional, for a caller that will wait: ARGV[3] the meta prefix and ARGV[4]
 * how long, in ms, its place in the wait queue lives unless renewed.
 * Returns `{1, 0}` when granted, `{0, pttl}` when a key holds another value
 * (pttl: that key's remaining lease, so a waiter knows how long it may wait).
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
 * caller leaves them.
 */
export const ACQUIRE_SCRIPT = defineScript(
  'acquire',
  `
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    local pttl = redis.call('PTTL', KEYS[i])
    if ARGV[3] then
      local t = redis.call('TIME')
      local now = t[1] * 1000 + math.floor(t[2] / 1000)
      local life = tonumber(ARGV[4])
      local q = ARGV[3] .. 'q:' .. KEYS[i]
      local e = ARGV[3] .. 't:' .. KEYS[i]
      redis.call('ZADD', q, 'NX', now, ARGV[1])
      redis.call('ZADD', e, now + life, ARGV[1])
      if redis.call('PTTL', q) < life then redis.call('PEXPIRE', q, life) end
      if redis.call('PTTL', e) < life then redis.call('PEXPIRE', e, life) end
    end
    return {0, pttl}
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if ARGV[3] then
    redis.call('ZREM', ARGV[3] .. 'q:' .. KEYS[i], ARGV[1])
    redis.call('ZREM', ARGV[3] .. 't:' .. KEYS[i], ARGV[1])
  end
end
return {1, 0}
`,
);
