import { defineScript } from './lua-script.js';

/**
 * The extend script for many locks in one call (the batched watchdog): each
 * lock is extended all or nothing, only where every key still holds its
 * value, never re-creating an expired key.
 *
 * KEYS: the keys of every lock, lock after lock. ARGV[1]: the number of
 * locks, then per lock: its key count, its value, its new lease in ms.
 * Returns one 1 (extended) or 0 per lock, in order.
 */
export const EXTEND_MANY_SCRIPT = defineScript(
  'extend-many',
  `
local out = {}
local k = 1
local a = 2
for l = 1, tonumber(ARGV[1]) do
  local n = tonumber(ARGV[a])
  local value = ARGV[a + 1]
  local ttl = ARGV[a + 2]
  a = a + 3
  local ok = 1
  for i = k, k + n - 1 do
    if redis.call('GET', KEYS[i]) ~= value then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for i = k, k + n - 1 do
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
  out[l] = ok
  k = k + n
end
return out
`,
);
