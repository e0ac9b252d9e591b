import { defineScript } from './lua-script.js';

/**
 * Reads what a node holds for one read/write lock key, for
 * `Redlock.inspect` with `mode`: writes nothing (expired readers are left
 * for the lock's own scripts to drop).
 *
 * KEYS[1]: the lock key, KEYS[2]: its readers (a sorted set of reader
 * values scored by the node time, in ms, at which each expires), KEYS[3]:
 * its writer intent. Returns `{value or false, pttl, readers, intent or
 * false, intent pttl}`, `readers` flat as `{value, ms left, ...}` for the
 * readers still live on the node's clock. The caller compares the values
 * with its own locks and never hands them out.
 */
export const INSPECT_RW_SCRIPT = defineScript(
  'inspect-rw',
  `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local all = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
local live = {}
for i = 1, #all, 2 do
  local left = tonumber(all[i + 1]) - now
  if left > 0 then
    live[#live + 1] = all[i]
    live[#live + 1] = left
  end
end
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  live,
  redis.call('GET', KEYS[3]),
  redis.call('PTTL', KEYS[3])
}
`,
);
