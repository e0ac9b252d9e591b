import { defineScript } from './lua-script.js';
import { waitQueueLua } from './wait-queue.lua.js';

/**
 * How long, in ms, the longest waiter for a key may see newcomers take it
 * before they must queue behind it (see below): bounds the wait of queued
 * waiters while letting a holder that asks again right after its release go
 * on briefly, which keeps a hot lock busy. Shorter windows let waiters
 * blocked on one key of a multi-resource lock keep newcomers off another
 * key that was free (docs/performance.md has the figures).
 */
export const BARGE_WINDOW_MS = 250;

const ACQUIRE_LUA =
  // The fast path comes before the shared helpers, so that it does not
  // even create them.
  `
if #KEYS == 1 then
  -- One key without fencing, free and nobody queued: done. Otherwise the
  -- key is put back and the full rules below decide.
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if redis.call('EXISTS', ARGV[3] .. 'q:' .. KEYS[1]) == 0 then return 1 end
    redis.call('DEL', KEYS[1])
  end
end
` +
  waitQueueLua() +
  `
local n = #KEYS
if ARGV[4] == '1' then n = n / 2 end
local meta = ARGV[3]
local life, arrival, member = unpackPlace(ARGV[5] or '')
local function refuse(key, pttl)
  local code = -1
  if pttl >= 0 then code = -2 - pttl end
  if not life then return code end
  enqueue(meta, key, member, arrival, tonumber(life))
  -- When this refusal ran, on this node's clock: a key given to the
  -- caller before it has expired (see transferred()).
  return {code, clock()}
end
local ours = {}
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return refuse(KEYS[i], redis.call('PTTL', KEYS[i]))
  end
  ours[i] = current == ARGV[1]
end
for i = 1, n do
  local q = meta .. 'q:' .. KEYS[i]
  -- A key holding our value (given to us) is ours whoever is queued.
  if not ours[i] and redis.call('EXISTS', q) == 1
      and not (member and redis.call('ZSCORE', q, member)) then
    local head, since = nextWaiter(meta, KEYS[i])
    if head and clock() - tonumber(since) >= ${BARGE_WINDOW_MS} then
      return refuse(KEYS[i], -1)
    end
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
-- Granted here, but the attempt may fail elsewhere and try again: a place
-- the caller holds lives on as on the nodes that refused it, or it would
-- lapse here and come back later, behind waiters every other node ranks
-- after it (nodes naming different waiters split their votes).
if life then
  for i = 1, n do
    if redis.call('ZSCORE', meta .. 'q:' .. KEYS[i], member) then
      enqueue(meta, KEYS[i], member, arrival, tonumber(life))
    end
  end
end
if n == #KEYS then return 1 end
local reply = {1, 0}
for i = 1, n do
  reply[i + 2] = redis.call('GET', KEYS[n + i]) or '0'
end
return reply
`;

/**
 * Takes every key of a lock on one node, all or nothing.
 *
 * KEYS: the n lock keys, then (with fencing) their n token counter keys.
 * ARGV[1]: the lock value, ARGV[2]: the lease in ms, ARGV[3]: the meta
 * prefix, ARGV[4]: `1` with fencing, else `0` or absent, ARGV[5]: the
 * caller's place in the wait queues, `<life> <arrival> <name>`, absent for
 * a single attempt (it takes no place). Trailing arguments that say
 * nothing are left out (see `acquireArgs`): each one costs the client and
 * every node a little on every acquire, and most acquires are single
 * uncontended attempts. `life`: how long, in ms, a refused caller's
 * place lives unless renewed; `arrival`: when the caller first asked (its
 * wall clock, ms): its rank in every node's queue, so that all nodes rank
 * their waiters alike (node clocks and arrival orders differ); `name`: the
 * caller's name in the queues (`<listener id> <value> <lease>`). Packed in
 * one argument, read only when the caller is refused or the key is
 * queued for. Sent with every key it may touch declared (`declareMetaKeys`):
 * the meta keys of each lock key follow, and their count in ARGV, both
 * taken off before the script reads them.
 * Returns `1` when granted (with fencing `{1, 0, counter1, ..., countern}`,
 * counters as decimal strings, `"0"` when absent: they are only read here
 * and raised by `FENCE_SCRIPT` once the client holds the lock); when
 * refused, `-2 - pttl` if a key holds another value (pttl: that key's
 * remaining lease, so a waiter knows how long it may wait), `-1` if the key
 * is free but waiters go first (see below), and for a caller with a place
 * (ARGV[5]) `{code, node time ms}` instead (see `transferred`); read them
 * with `acquireReply`. Plain integers, not arrays, on the common path:
 * they are cheaper for the client to read.
 *
 * Checking all keys before writing any makes a multi-resource lock atomic on
 * the node: two callers locking overlapping sets never hold half each, so
 * they cannot deadlock. A key that already holds our own value counts as
 * granted (an earlier attempt's reply may have been lost) and is refreshed.
 * Each key is a plain `SET key value PX ttl`, so operators and other tools
 * following the SET NX convention see the holder with `GET`. A single key
 * without fencing that is free and has no queue (the common case) costs two
 * calls: `SET NX`, then a look for a queue.
 *
 * Waiting (see WAIT_QUEUE_LUA; only a hint, never needed for safety):
 * - a refused caller takes a place in the queue of the key that refused it
 *   and keeps it, granted or not, until it releases or gives up (so a lock
 *   whose attempt failed on other nodes keeps its turn here);
 * - bounded barging: a free key is refused to a caller that is not in its
 *   live queue once the head of that queue has waited BARGE_WINDOW_MS.
 *   Before that, a newcomer may take a free key: typically the holder that
 *   just released and asks again, which keeps a hot lock busy; past the
 *   bound the queue is served in order, so no waiter starves. Any queued
 *   waiter may take a free key, not only the head, so a multi-resource
 *   waiter blocked on another key keeps nobody waiting.
 */
export const ACQUIRE_SCRIPT = defineScript('acquire', ACQUIRE_LUA, {
  // It never hands a key on: no grant note.
  kinds: ['q:', 't:'],
  prefixArg: 2,
  fencingArg: 3,
});

/**
 * The arguments of {@link ACQUIRE_SCRIPT}, without the trailing ones that
 * say nothing (no fencing, no place).
 */
export function acquireArgs(
  value: string,
  ttl: number,
  metaPrefix: string,
  fencing: boolean,
  place: string | undefined,
): (string | number)[] {
  if (place !== undefined)
    return [value, ttl, metaPrefix, fencing ? 1 : 0, place];
  return fencing ? [value, ttl, metaPrefix, 1] : [value, ttl, metaPrefix];
}

/**
 * Reads an acquire script reply: whether it granted, the holder's
 * remaining lease when a key was held by another value, and for a queued
 * caller's refusal when it ran on the node's clock (`refusedAt`).
 */
export function acquireReply(reply: unknown): {
  granted: boolean;
  holderTtl?: number;
  refusedAt?: number;
} {
  let code: number;
  let refusedAt: number | undefined;
  if (Array.isArray(reply)) {
    if (reply[0] === 1) return { granted: true };
    code = Number(reply[0]);
    refusedAt = Number(reply[1]);
  } else {
    code = Number(reply);
    if (code === 1) return { granted: true };
  }
  return {
    granted: false,
    holderTtl: code <= -2 ? -2 - code : undefined,
    refusedAt,
  };
}
