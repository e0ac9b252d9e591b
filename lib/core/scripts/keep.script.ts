import { defineScript } from './lua-script.js';
import { waitQueueLua } from './wait-queue.lua.js';

const KEEP_LUA =
  `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local q = ARGV[3] .. 'q:' .. KEYS[1]
if redis.call('EXISTS', q) == 1 then
` +
  waitQueueLua() +
  `
  -- Drops expired places first: a crashed waiter is nobody.
  local head = nextWaiter(ARGV[3], KEYS[1])
  local others = redis.call('ZCARD', q)
  if ARGV[4] ~= '' and redis.call('ZSCORE', q, ARGV[4]) then
    others = others - 1
  end
  if head and others > 0 then return -1 end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/**
 * Renews a single-key lock on one node for another caller of the holder's
 * process, but only while no other waiter is queued for the key: the end
 * of an in-process handoff streak (see `renewForNext`). A streak
 * ends so that other processes get their turn; when none waits, the lease
 * is renewed here in one round trip instead of a release and a new
 * acquire (two).
 *
 * KEYS[1]: the lock key. ARGV[1]: the lock value, ARGV[2]: the new lease
 * in ms, ARGV[3]: the meta prefix, ARGV[4]: the holder's name in the wait
 * queues (empty if it never waited; it does not count as another waiter).
 * Sent with its meta keys declared, as the acquire script.
 * Returns `1` when renewed, `-1` when another waiter is queued (nothing
 * changed), `0` when the key no longer holds our value.
 */
export const KEEP_SCRIPT = defineScript('keep', KEEP_LUA, {
  kinds: ['q:', 't:'],
  prefixArg: 2,
});
