import { defineScript } from './lua-script.js';
import { WAIT_QUEUE_LUA } from './wait-queue.lua.js';

/**
 * Takes every key of a lock on one node, all or nothing.
 *
 * KEYS: the n lock keys, then (with fencing) their n token counter keys.
 * ARGV[1]: the lock value, ARGV[2]: the lease in ms, ARGV[3]: `1` with
 * fencing, else `0`, ARGV[4]: the meta prefix, ARGV[5]: how long, in ms, a
 * refused caller's place in the wait queue lives unless renewed (`0`: a
 * single attempt, it takes no place), ARGV[6]: the caller's name in the
 * queues (`<listener id> <value> <lease>`; empty for a single attempt),
 * ARGV[7]: how long, in ms, the head of a queue may wait before newcomers
 * must queue behind it, ARGV[8]: when the caller first asked (its wall
 * clock, ms): its place in every node's queue, so that all nodes rank their
 * waiters alike (node clocks and arrival orders differ). Clamped to the
 * node's last second, so a client whose clock runs behind cannot jump far
 * ahead.
 * Returns `{1, 0}` when granted (with fencing `{1, 0, counter1, ...,
 * countern}`, counters as decimal strings, `"0"` when absent: they are only
 * read here and raised by `FENCE_SCRIPT` once the client holds the lock),
 * `{0, pttl}` when a key holds another value (pttl: that key's remaining
 * lease, so a waiter knows how long it may wait), `{0, -1}` when the key
 * is free but waiters go first (see below).
 *
 * Checking all keys before writing any makes a multi-resource lock atomic on
 * the node: two callers locking overlapping sets never hold half each, so
 * they cannot deadlock. A key that already holds our own value counts as
 * granted (an earlier attempt's reply may have been lost) and is refreshed.
 * Each key is a plain `SET key value PX ttl`, so operators and other tools
 * following the SET NX convention see the holder with `GET`.
 *
 * Waiting (see WAIT_QUEUE_LUA; only a hint, never needed for safety):
 * - a refused caller takes a place in the queue of the key that refused it
 *   and keeps it, granted or not, until it releases or gives up (so a lock
 *   whose attempt failed on other nodes keeps its turn here);
 * - bounded barging: a free key is refused to a caller that is not in its
 *   live queue once the head of that queue has waited ARGV[7] ms. Before
 *   that, a newcomer may take a free key: typically the holder that just
 *   released and asks again, which keeps a hot lock busy; past the bound
 *   the queue is served in order, so no waiter starves. Any queued waiter
 *   may take a free key, not only the head, so a multi-resource waiter
 *   blocked on another key keeps nobody waiting.
 */
export const ACQUIRE_SCRIPT = defineScript(
  'acquire',
  WAIT_QUEUE_LUA +
    `
local n = #KEYS
if ARGV[3] == '1' then n = n / 2 end
local meta, life, member = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local function refuse(key, pttl)
  if life > 0 then enqueue(meta, key, member, ARGV[8], life) end
  return {0, pttl}
end
for i = 1, n do
  local current = redis.call('GET', KEYS[i])
  if current and current ~= ARGV[1] then
    return refuse(KEYS[i], redis.call('PTTL', KEYS[i]))
  end
end
for i = 1, n do
  local q = meta .. 'q:' .. KEYS[i]
  if redis.call('EXISTS', q) == 1 and not redis.call('ZSCORE', q, member) then
    local head, since = nextWaiter(meta, KEYS[i])
    if head and clock() - tonumber(since) >= tonumber(ARGV[7]) then
      return refuse(KEYS[i], -1)
    end
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
if n == #KEYS then return {1, 0} end
local reply = {1, 0}
for i = 1, n do
  reply[i + 2] = redis.call('GET', KEYS[n + i]) or '0'
end
return reply
`,
);
