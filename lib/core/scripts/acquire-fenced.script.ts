import { defineScript } from './lua-script.js';

/**
 * The acquire script (see `ACQUIRE_SCRIPT`, same checks and writes) that
 * also reads each resource's fencing counter on a granting node, so the
 * client can propose tokens above them without an extra round trip.
 *
 * KEYS: the n lock keys, then their n counter keys. ARGV[1]: the lock value,
 * ARGV[2]: the lease in ms. Returns `{1, 0, counter1, ..., countern}` when
 * granted (counters as decimal strings, `"0"` when absent), `{0, pttl}`
 * when a key holds another value. Counters are only read here: they are
 * raised by `FENCE_SCRIPT`, once the client holds the lock.
 */
export const ACQUIRE_FENCED_SCRIPT = defineScript(
  'acquire-fenced',
  `
local n = #KEYS / 2
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
local reply = {1, 0}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  reply[i + 2] = redis.call('GET', KEYS[n + i]) or '0'
end
return reply
`,
);
