import { defineScript } from './lua-script.js';
import { rwWakeLua, WAIT_HERE_LUA } from './rw-wake.lua.js';

/**
 * The value a read/write lock's key holds while readers hold it: never a
 * lock value (those are base64url, without `~`). A mutex or a writer that
 * finds it is refused as by any holder, so the shapes never mix on the
 * nodes, and operators see `~readers` with `GET`.
 */
export const READERS_MARK = '~readers';

/**
 * Shared by the read/write scripts. KEYS: four per resource, column by
 * column (`[k1, k2, rd1, rd2, wi1, wi2, sw1, sw2]` for two resources, as a Cluster
 * node splits keys by slot): the lock key (the writer's value, or
 * READERS_MARK while readers hold it, living at least as long as the last
 * reader),
 * its readers (a sorted set of reader values scored by the node time, in
 * ms, at which each expires) and its writer intent (the value of a writer
 * that readers refused: new readers are refused while it lives, so a
 * stream of readers cannot starve it), and its wake list (see
 * WAIT_HERE_LUA).
 */
const RW_LUA = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local MARK = '${READERS_MARK}'
local n = #KEYS / 4
-- The expiry (node ms) of the last live reader, dropping expired ones.
local function lastReader(rd)
  redis.call('ZREMRANGEBYSCORE', rd, '-inf', now)
  local last = redis.call('ZRANGE', rd, -1, -1, 'WITHSCORES')
  if #last == 0 then return nil end
  return tonumber(last[2])
end
-- The lock key and the readers live as long as the last reader.
local function keepReaders(k, rd)
  local last = lastReader(rd)
  if last then
    redis.call('SET', k, MARK, 'PX', math.max(1, last - now))
    redis.call('PEXPIRE', rd, math.max(1, last - now))
  else
    redis.call('DEL', k, rd)
  end
end
`;

const ACQUIRE_LUA =
  RW_LUA +
  WAIT_HERE_LUA +
  `
local value, ttl, write, life = ARGV[1], tonumber(ARGV[2]), ARGV[3] == 'w', ARGV[4]
local member, wakeLife, listed = ARGV[5], tonumber(ARGV[6]), ARGV[7] == '1'
for i = 1, n do
  local k, rd, wi = KEYS[i], KEYS[n + i], KEYS[2 * n + i]
  local cur = redis.call('GET', k)
  if cur and cur ~= MARK and cur ~= value then
    -- A semaphore's mark: another shape, and which resource.
    if string.sub(cur, 1, 1) == '~' then return {-3, cur, i} end
    waitHere(KEYS[3 * n + i], member, wakeLife)
    return -2 - math.max(0, redis.call('PTTL', k))
  end
  local intent = redis.call('GET', wi)
  if write then
    local last = cur == MARK and lastReader(rd)
    if last then
      if not intent or intent == value then
        redis.call('SET', wi, value, 'PX', life)
      end
      waitHere(KEYS[3 * n + i], member, wakeLife)
      return -2 - (last - now)
    end
    if intent and intent ~= value then
      waitHere(KEYS[3 * n + i], member, wakeLife)
      return -1
    end
  elseif intent then
    waitHere(KEYS[3 * n + i], member, wakeLife)
    return -1
  end
end
for i = 1, n do
  local k, rd, wi = KEYS[i], KEYS[n + i], KEYS[2 * n + i]
  if listed then leaveHere(KEYS[3 * n + i], member) end
  if write then
    redis.call('SET', k, value, 'PX', ttl)
    redis.call('DEL', rd)
    if redis.call('GET', wi) == value then redis.call('DEL', wi) end
  else
    redis.call('ZADD', rd, now + ttl, value)
    -- The mark and the readers must outlive this reader; set again only
    -- when they would not, with half a lease to spare so that most
    -- readers skip it (a writer looks at the live readers, not the mark).
    -- No pruning here (a release or a writer prunes).
    if redis.call('PTTL', k) < ttl then
      local life = ttl + math.ceil(ttl / 2)
      redis.call('SET', k, MARK, 'PX', life)
      redis.call('PEXPIRE', rd, life)
    end
  end
end
return 1
`;

/**
 * Takes a read or write lock on every resource of a call on one node, all
 * or nothing. KEYS: four per resource, column by column (see RW_LUA).
 * ARGV[1]: the lock value, ARGV[2]: the lease in ms, ARGV[3]: `r` (read)
 * or `w` (write), ARGV[4]: how long a writer's intent lives unless its
 * next attempt renews it, in ms; then, for a caller woken by releases,
 * ARGV[5]: its wake-list entry, ARGV[6]: how long the list lives (ms),
 * ARGV[7]: `1` once an attempt was refused (it may be listed): a refusal
 * puts it on the list, a grant takes it off.
 *
 * A writer is granted when the key is free (or ours) and no reader lives;
 * a reader when no writer holds the key and no writer's intent lives. A
 * writer refused by readers leaves its intent, unless another writer's
 * lives. Every grant checks what is live on this node's clock, as the
 * mutex does: two holders that conflict (a writer and anyone) never hold a
 * quorum each at once, as two quorums share a node and that node granted
 * only one of them while the other's entry lived.
 *
 * Returns `1` when granted; `-2 - pttl` when refused by a holder (`pttl`:
 * the writer's lease left, or the last reader's), `-1` when refused by a
 * writer's intent (no lease to wait for): as the mutex's acquire script;
 * `{-3, mark, i}` when resource `i`'s key holds a semaphore's mark.
 */
export const RW_ACQUIRE_SCRIPT = defineScript('rw-acquire', ACQUIRE_LUA);

/** The release's source, for a single server or (`sharded`) a Cluster node. */
function releaseSource(sharded: boolean): string {
  return (
    RW_LUA +
    rwWakeLua(sharded) +
    `
local value, keepIntent = ARGV[1], ARGV[2] == '1'
local deleted = 0
for i = 1, n do
  local k, rd, wi = KEYS[i], KEYS[n + i], KEYS[2 * n + i]
  local cur = redis.call('GET', k)
  -- The writer gone, the last reader, or a writer's intent: whoever the
  -- node refused may go now (every reader, or a writer).
  local freed, reader = false, false
  if cur == value then
    redis.call('DEL', k)
    deleted = deleted + 1
    freed = true
  elseif redis.call('ZREM', rd, value) == 1 then
    deleted = deleted + 1
    -- The last live reader gone: the mark goes with it. Otherwise it
    -- already outlives the readers left.
    redis.call('ZREMRANGEBYSCORE', rd, '-inf', now)
    if cur == MARK and redis.call('ZCARD', rd) == 0 then
      redis.call('DEL', k, rd)
      freed = true
    end
    reader = true
  end
  -- A reader has no intent to drop.
  if not keepIntent and not reader and redis.call('GET', wi) == value then
    redis.call('DEL', wi)
    freed = true
  end
  -- A failed attempt's take-back (keepIntent) tells nobody: it would only
  -- wake waiters whose own failed attempts wake the next, and so on.
  if freed and not keepIntent then wakeAll(KEYS[3 * n + i], k) end
end
return deleted
`
  );
}

/**
 * Deletes a read or write lock on one node: the key if it holds our value
 * (a writer), our reader entry otherwise (the key then lives as long as
 * the last reader left, or goes with it). Never another holder's entry.
 * The writer gone, the last reader gone, or a writer's intent dropped
 * tells every waiter on the wake list (not for a failed attempt's
 * take-back, which keeps the intent).
 * KEYS: four per resource. ARGV[1]: the lock value, ARGV[2]: `1` to keep
 * our writer intent (a failed attempt that waits on), else it is deleted.
 * Returns how many resources it released.
 */
export const RW_RELEASE_SCRIPT = defineScript(
  'rw-release',
  releaseSource(false),
  { clusterSource: releaseSource(true) },
);

const EXTEND_LUA =
  RW_LUA +
  `
local value, ttl = ARGV[1], tonumber(ARGV[2])
for i = 1, n do
  local k, rd = KEYS[i], KEYS[n + i]
  local cur = redis.call('GET', k)
  if cur ~= value then
    local expiry = cur == MARK and redis.call('ZSCORE', rd, value)
    if not expiry or tonumber(expiry) <= now then return 0 end
  end
end
for i = 1, n do
  local k, rd = KEYS[i], KEYS[n + i]
  if redis.call('GET', k) == value then
    redis.call('PEXPIRE', k, ttl)
  else
    redis.call('ZADD', rd, 'XX', now + ttl, value)
    keepReaders(k, rd)
  end
end
return 1
`;

/**
 * Sets the lease of a read or write lock on one node again, all or
 * nothing, only where each entry is still ours and live (never brought
 * back: it may have been granted to a conflicting holder meanwhile).
 * KEYS: four per resource. ARGV[1]: the lock value, ARGV[2]: the lease
 * in ms (shorter than before for `letExpire`). Returns 1, or 0.
 */
export const RW_EXTEND_SCRIPT = defineScript('rw-extend', EXTEND_LUA);
