import { defineScript } from './lua-script.js';

/**
 * Reads what a node holds for a semaphore, for `Redlock.inspect` with
 * `permits`: writes nothing.
 *
 * KEYS[1]: the resource key (`~permits:<n>` while any permit lives),
 * KEYS[2]: its holders (a sorted set scored by the node time, in ms, at
 * which each lease ends), KEYS[3]: its fencing counter, KEYS[4..]: the
 * permit slot keys read. Returns `{mark or false, its pttl, live holders,
 * counter or false, slots}`, `slots` flat as `{value or false, pttl, ...}`
 * in the order of the keys. The caller compares the values with its own
 * locks and never hands them out.
 */
export const INSPECT_PERMITS_SCRIPT = defineScript(
  'inspect-permits',
  `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local slots = {}
for i = 4, #KEYS do
  slots[#slots + 1] = redis.call('GET', KEYS[i])
  slots[#slots + 1] = redis.call('PTTL', KEYS[i])
end
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  #redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf'),
  redis.call('GET', KEYS[3]),
  slots
}
`,
);
