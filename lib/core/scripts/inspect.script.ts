import { defineScript } from './lua-script.js';

/**
 * Reads what a node holds for one lock key, for `Redlock.inspect`: writes
 * nothing.
 *
 * KEYS[1]: the lock key, KEYS[2]: its wait queue (`<metaPrefix>q:<key>`),
 * KEYS[3]: its fencing counter. Returns `{value or false, pttl, waiters,
 * counter or false}`; the caller compares the value with its own locks and
 * never hands it out.
 */
export const INSPECT_SCRIPT = defineScript(
  'inspect',
  `
return {
  redis.call('GET', KEYS[1]),
  redis.call('PTTL', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('GET', KEYS[3])
}
`,
);
