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
 * acquire script), it drops waiters whose place expired and tells the
 * longest-waiting live one: `<key>\n<its value>` on `<meta>w:<its
 * listener id>`, a channel only that waiter's process listens to (a
 * broadcast would wake every waiting process for every release). Without
 * waiters nothing is published, so an uncontended release costs no more
 * than before.
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
        local sp = string.find(head[1], ' ', 1, true)
        redis.call('PUBLISH', ARGV[2] .. 'w:' .. string.sub(head[1], 1, sp - 1),
          KEYS[i] .. '\\n' .. string.sub(head[1], sp + 1))
      end
    end
  end
end
return deleted
`,
);
