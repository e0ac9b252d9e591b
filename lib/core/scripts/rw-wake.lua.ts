import { releaseFlagLua, releaseMessageLua } from './release-message.js';
import { announceLua } from './wait-queue.lua.js';

/**
 * A read/write lock's wake list on a node, `<meta>sw:<key>` (declared by
 * the scripts, in the key's slot): a set of the waiters the node refused,
 * `<channel> <token>` (the channel their process listens on,
 * `<meta>w:<listener id>`, and a token naming the waiting acquire there).
 * A refused attempt puts its waiter there (`waitHere`), a granted one takes
 * it off (`leaveHere`); the list lapses `life` ms after the last refusal.
 */
export const WAIT_HERE_LUA = `
local function waitHere(list, member, life)
  if not member then return end
  redis.call('SADD', list, member)
  if redis.call('PTTL', list) < life then redis.call('PEXPIRE', list, life) end
end
local function leaveHere(list, member)
  if member then redis.call('SREM', list, member) end
end
`;

/**
 * What a release that frees the lock runs on the wake list (see
 * {@link WAIT_HERE_LUA}): `wakeAll` tells every waiter (readers may all
 * go; a writer finds out whether it may) on its process's channel with the
 * mutex's release message (told to ask, see `RELEASE_MESSAGE`), and
 * empties the list: one refused again puts itself back. An entry whose
 * waiter went away (it gave up) is told once for nothing, and its process
 * wakes another waiter of the key instead, if it has one.
 */
const WAKE_LUA = `
local function tell(key, member)
  local channel, value = string.match(member, '^(.*) ([^ ]+)$')
  if not channel then return end
  local given = ${releaseFlagLua()}
  announce(channel, key, ${releaseMessageLua('key', 'value', 'given')})
end
local function wakeAll(list, key)
  local all = redis.call('SMEMBERS', list)
  if #all == 0 then return end
  for i = 1, #all do tell(key, all[i]) end
  redis.call('DEL', list)
end
`;

/** The wake-list helpers of a release, for a single server or (`sharded`) a Cluster node. */
export function rwWakeLua(sharded: boolean): string {
  return announceLua(sharded) + WAIT_HERE_LUA + WAKE_LUA;
}
