import { defineScript } from './lua-script.js';

/**
 * Resets the lease of every key of a lock on one node, all or nothing, and
 * only where every key still holds our value. It never re-creates a key that
 * expired: an expired key may have been granted to someone else in the
 * meantime, so bringing it back would give two holders.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the new lease in ms.
 * Returns 1 when extended, 0 otherwise.
 */
export const EXTEND_SCRIPT = defineScript(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
);
