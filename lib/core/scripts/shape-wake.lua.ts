import { releaseFlagLua, releaseMessageLua } from './release-message.js';
import { announceLua } from './wait-queue.lua.js';

/**
 * A semaphore's or read/write lock's wake list on a node, `<meta>sw:<key>`
 * (declared by the scripts, in the key's slot): a sorted set of the
 * waiters the node refused, `<channel> <token>` (the channel their
 * process listens on, `<meta>w:<listener id>`, and a token naming the
 * waiting acquire there), ranked by when the acquire began (the time the
 * client sends, the same to every node, clamped to the node's last second
 * as the mutex's queue does), so that every node tells the same waiter
 * first. A refused attempt puts its waiter there (`waitHere`, keeping its
 * rank), a granted one takes it off (`leaveHere`); the list lapses `life`
 * ms after the last refusal. An entry whose waiter went away stays until
 * a release tells it (its process then wakes another waiter of the key,
 * if it has one).
 */
export const WAIT_HERE_LUA = `
local function waitHere(list, member, arrival, life, now)
  if not member then return end
  arrival = tonumber(arrival)
  if arrival > now then arrival = now end
  if arrival < now - 1000 then arrival = now - 1000 end
  redis.call('ZADD', list, 'NX', arrival, member)
  if redis.call('PTTL', list) < life then redis.call('PEXPIRE', list, life) end
end
local function leaveHere(list, member)
  if member then redis.call('ZREM', list, member) end
end
`;

/**
 * What a release that frees room runs on the wake list (see
 * {@link WAIT_HERE_LUA}): `wakeOne` tells the waiter that began first (a
 * freed permit), `wakeAll` every waiter (a writer gone, or the
 * last reader), each on its process's channel with the mutex's release
 * message (told to ask, see `RELEASE_MESSAGE`), and takes them off: one
 * that is refused again puts itself back. Only the waiters named wake, so
 * other processes' waiters do not all rush the nodes at once.
 */
const WAKE_LUA = `
local function tell(key, member)
  local channel, value = string.match(member, '^(.*) ([^ ]+)$')
  if not channel then return end
  local given = ${releaseFlagLua()}
  announce(channel, key, ${releaseMessageLua('key', 'value', 'given')})
end
local function wakeOne(list, key)
  local first = redis.call('ZRANGE', list, 0, 0)
  if first[1] then
    redis.call('ZREM', list, first[1])
    tell(key, first[1])
  end
end
local function wakeAll(list, key)
  local all = redis.call('ZRANGE', list, 0, -1)
  if #all == 0 then return end
  for i = 1, #all do tell(key, all[i]) end
  redis.call('DEL', list)
end
`;

/** The wake-list helpers of a release, for a single server or (`sharded`) a Cluster node. */
export function shapeWakeLua(sharded: boolean): string {
  return announceLua(sharded) + WAIT_HERE_LUA + WAKE_LUA;
}
