import { defineScript } from './lua-script.js';

/**
 * The value a semaphore's resource key holds while its permits are in use:
 * `~permits:<n>`, never a lock value (those are base64url, without `~`). A
 * mutex, a writer or a reader elsewhere is refused as by any holder, and a
 * semaphore of another count learns the count in use (`LockShapeError`).
 */
export function permitsMark(permits: number): string {
  return `~permits:${permits}`;
}

/**
 * Shared by the permit scripts. A resource `k` used as a semaphore has
 * permit slot keys `<k>#permit-<i>` (in `k`'s hash slot) and holders (a
 * sorted set of the holders' values scored by the node time, in ms, at
 * which each lease ends). `k` holds the mark for at least as long as the
 * last holder (up to half a lease longer), and goes when the last live
 * holder releases.
 */
const PERMIT_LUA = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local function keepMark(k, h, mark)
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
  local last = redis.call('ZRANGE', h, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', k, h)
    return
  end
  local left = math.max(1, tonumber(last[2]) - now)
  redis.call('SET', k, mark, 'PX', left)
  redis.call('PEXPIRE', h, left)
end
-- After a holder was just added: the mark and the holders must outlive
-- it. Set again only when they would not, with half a lease to spare so
-- that most acquires skip it (the slots bound the holders, not the mark).
local function stretchMark(k, h, mark, ttl)
  if redis.call('PTTL', k) >= ttl then return end
  local life = ttl + math.ceil(ttl / 2)
  redis.call('SET', k, mark, 'PX', life)
  redis.call('PEXPIRE', h, life)
end
`;

const ACQUIRE_LUA =
  PERMIT_LUA +
  `
local value, ttl, mark = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local fencing, c = ARGV[4] == '1', tonumber(ARGV[5])
local m = #KEYS / (2 + c)
if fencing then m = #KEYS / (3 + c) end
local choice = {}
for j = 1, m do
  local cur = redis.call('GET', KEYS[j])
  if cur and cur ~= mark then
    -- Another shape holds the resource: what it is, and which resource.
    if string.sub(cur, 1, 1) ~= '~' then cur = '' end
    return {-3, cur, j}
  end
  for t = 1, c do
    local held = redis.call('GET', KEYS[(1 + t) * m + j])
    if not held or held == value then
      choice[j] = t
      break
    end
  end
  if not choice[j] then
    -- Every candidate is held: the first lease of a holder here to end
    -- (two calls instead of a PTTL per candidate; a hint for the wait).
    redis.call('ZREMRANGEBYSCORE', KEYS[m + j], '-inf', now)
    local first = redis.call('ZRANGE', KEYS[m + j], 0, 0, 'WITHSCORES')
    if #first == 0 then return -2 end
    return -2 - math.max(0, tonumber(first[2]) - now)
  end
end
for j = 1, m do
  redis.call('SET', KEYS[(1 + choice[j]) * m + j], value, 'PX', ttl)
  redis.call('ZADD', KEYS[m + j], now + ttl, value)
  stretchMark(KEYS[j], KEYS[m + j], mark, ttl)
end
local reply = {1, choice[1]}
if fencing then
  for j = 1, m do
    reply[j + 2] = redis.call('GET', KEYS[(2 + c) * m + j]) or '0'
  end
end
return reply
`;

/**
 * Takes a permit slot of each resource of a call on one node, all or
 * nothing: for each resource, the first of its `c` candidate slots that is
 * free (or already ours), taken as a mutex's key is, so a slot has one
 * holder over the quorum as a mutex has. The resource key holds the mark
 * while any permit lives, so other shapes are kept out.
 *
 * KEYS, column by column (as a Cluster node splits keys by slot), for the
 * m resources: their resource keys, their holders, then the candidate slot
 * keys (`<key>#permit-<i>`, in the resource key's hash slot), `c` columns
 * in the order to try, then with fencing their token counters. ARGV[1]:
 * the lock value, ARGV[2]: the lease in ms, ARGV[3]: the mark
 * (`~permits:<n>`), ARGV[4]: `1` with fencing, ARGV[5]: `c`.
 * Returns `{1, t, counter1, ...}` when granted: `t` the candidate taken for
 * the first resource (1-based; the caller sends several candidates only
 * for one resource), the counters with fencing (as the mutex's acquire
 * script); `-2 - pttl` when every candidate of a resource is held by
 * another value (`pttl`: the shortest lease left of the resource's
 * holders on the node); `{-3, mark, j}` when
 * resource `j`'s key holds another shape (its mark, or `""` for a mutex or
 * a writer).
 */
export const PERMIT_ACQUIRE_SCRIPT = defineScript(
  'permit-acquire',
  ACQUIRE_LUA,
);

/**
 * Sets a permit lock's lease again on one node, all or nothing, only where
 * each slot key still holds our value (never brought back), and the mark's
 * with it. KEYS, column by column: the resource keys, the slot keys held,
 * the holders (see PERMIT_LUA). ARGV[1]: the lock
 * value, ARGV[2]: the lease in ms, ARGV[3]: the mark. Returns 1 or 0.
 */
export const PERMIT_EXTEND_SCRIPT = defineScript(
  'permit-extend',
  PERMIT_LUA +
    `
local value, ttl, mark = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local m = #KEYS / 3
for j = 1, m do
  if redis.call('GET', KEYS[m + j]) ~= value then return 0 end
end
for j = 1, m do
  redis.call('PEXPIRE', KEYS[m + j], ttl)
  redis.call('ZADD', KEYS[2 * m + j], now + ttl, value)
  local cur = redis.call('GET', KEYS[j])
  if not cur or cur == mark then keepMark(KEYS[j], KEYS[2 * m + j], mark) end
end
return 1
`,
);

/**
 * Deletes a permit lock's slot keys on one node where they hold our value
 * (compare-and-delete), with their holder entries; the mark goes with the
 * last holder (an entry whose slot expired lapses with its lease). KEYS: as the extend's. ARGV[1]: the lock value. Returns how
 * many slots it deleted.
 */
export const PERMIT_RELEASE_SCRIPT = defineScript(
  'permit-release',
  PERMIT_LUA +
    `
local m = #KEYS / 3
local deleted = 0
for j = 1, m do
  -- The holder entry goes with the slot: a failed attempt's take-back of
  -- the candidates a node took while another node took the chosen one
  -- must not drop the entry of the slot held.
  if redis.call('GET', KEYS[m + j]) == ARGV[1] then
    redis.call('DEL', KEYS[m + j])
    deleted = deleted + 1
    local h = KEYS[2 * m + j]
    redis.call('ZREM', h, ARGV[1])
    -- The last live holder gone: the mark goes with it. Otherwise it
    -- already outlives the holders left.
    redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
    if redis.call('ZCARD', h) == 0 then
      local cur = redis.call('GET', KEYS[j])
      if cur and string.sub(cur, 1, 9) == '~permits:' then redis.call('DEL', KEYS[j]) end
    end
  end
end
return deleted
`,
);
