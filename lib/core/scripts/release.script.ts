import { defineScript } from './lua-script.js';

/**
 * Deletes the keys of a lock on one node, but only those that still hold our
 * value: a key that expired and was taken by another holder is left alone.
 * A client-side GET then DEL would race with that expiry.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value. Returns how many keys it deleted.
 */
export const RELEASE_SCRIPT = defineScript(
  'release',
  `
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
`,
);
