import { defineScript } from './lua-script.js';

/**
 * Puts a lock's keys back on a node that lost them (`recreateOnExtend`),
 * all or nothing: only when no key holds another value, each missing key
 * set with `SET NX PX` (never over another value: checked and written in
 * one script, so nothing comes between), and a key that still holds our
 * value gets the lease. Sent only to nodes that refused an extension,
 * after a quorum of the others extended it in the same round.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the lease in ms.
 * Returns 1 when the keys hold our value now, 0 when another value sits on
 * one of them (nothing written).
 */
export const RECREATE_SCRIPT = defineScript(
  'recreate',
  `
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  if not redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
end
return 1
`,
);
