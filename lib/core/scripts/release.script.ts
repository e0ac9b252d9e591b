import { defineScript } from './lua-script.js';

/**
 * Deletes the keys of a lock on one node, but only those that still hold our
 * value: a key that expired and was taken by another holder is left alone.
 * A client-side GET then DEL would race with that expiry.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the meta prefix.
 * Returns how many keys it deleted.
 *
 * When someone waits for a deleted key (its wait queue exists, see the
 * acquire script), it publishes `<key>\n<value of the longest-waiting live
 * waiter>` on `<meta>released`, after dropping waiters whose place expired.
 * Without waiters nothing is published, so an uncontended release costs no
 * more than before.
 */
export const RELEASE_SCRIPT = defineScript(
  'release',
  `
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    local q = ARGV[2] .. 'q:' .. KEYS[i]
    if redis.call('EXISTS', q) == 1 then
      local e = ARGV[2] .. 't:' .. KEYS[i]
      local t = redis.call('TIME')
      local now = t[1] * 1000 + math.floor(t[2] / 1000)
      local gone = redis.call('ZRANGEBYSCORE', e, '-inf', now)
      for j = 1, #gone do
        redis.call('ZREM', q, gone[j])
      end
      redis.call('ZREMRANGEBYSCORE', e, '-inf', now)
      local head = redis.call('ZRANGE', q, 0, 0)
      if head[1] then
        redis.call('PUBLISH', ARGV[2] .. 'released', KEYS[i] .. '\\n' .. head[1])
      end
    end
  end
end
return deleted
`,
);
