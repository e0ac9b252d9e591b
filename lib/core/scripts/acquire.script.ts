import { defineScript } from './lua-script.js';

/**
 * Takes every key of a lock on one node, all or nothing.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the lease in ms.
 * Returns `{1, 0}` when granted, `{0, pttl}` when a key holds another value
 * (pttl: that key's remaining lease, so a waiter knows how long it may wait).
 *
 * Checking all keys before writing any makes a multi-resource lock atomic on
 * the node: two callers locking overlapping sets never hold half each, so
 * they cannot deadlock. A key that already holds our own value counts as
 * granted (an earlier attempt's reply may have been lost) and is refreshed.
 * Each key is a plain `SET key value PX ttl`, so operators and other tools
 * following the SET NX convention see the holder with `GET`.
 */
export const ACQUIRE_SCRIPT = defineScript(
  'acquire',
  `
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1, 0}
`,
);
