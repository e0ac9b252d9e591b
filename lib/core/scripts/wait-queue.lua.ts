import { releaseFlagLua, releaseMessageLua } from './release-message.js';

/**
 * Lua helpers shared by the acquire and release scripts (pasted at the top
 * of both): the per-key wait queue, and handing a freed key to the
 * longest-waiting waiter.
 *
 * Keys, all under the meta prefix (`meta` below):
 * - `q:<key>` sorted set: waiters by arrival (the time the client sent
 *   with its first attempt, the same on every node; ties ordered by name).
 *   Every node ranks the same waiters alike, so every node hands a freed
 *   key to the same waiter: nodes that named different waiters would split
 *   their votes, and nobody would get the lock;
 * - `t:<key>` sorted set: the same waiters by when their place expires
 *   (renewed at each attempt), so a crashed waiter drops out;
 * - `g:<key>` string: the value of a waiter the key was given to (below),
 *   as long as that grant's lease.
 *
 * A waiter's name is `<listener id> <lock value> <lease ms>`: the id names
 * the channel of its process (`w:<id>`), the value names the waiter within
 * it. A lease above 0 (single-resource locks without fencing) means the key
 * may be given to it outright: `handTo` sets the key to its value with that
 * lease, and the waiter counts the node as granted from the message alone,
 * without a round trip (see `transferred` for why that is safe).
 * Otherwise the waiter is only told, and asks.
 * `handTo` publishes the release message (see `RELEASE_MESSAGE`): the
 * node's time in it orders the grant against the waiter's attempts on that
 * node (see `transferred`).
 *
 * `enqueue` gives `member` a place ranked by `arrival` (the client's clock,
 * clamped to the node's last second, so a client whose clock runs behind
 * cannot jump far ahead) that lives `life` ms unless renewed; a client
 * sends the three packed by `packPlace`, read back by `unpackPlace`.
 */
const WAIT_QUEUE_LUA = `
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  return now
end
local function nextWaiter(meta, key)
  local q = meta .. 'q:' .. key
  local e = meta .. 't:' .. key
  local gone = redis.call('ZRANGEBYSCORE', e, '-inf', clock())
  if #gone > 0 then
    for j = 1, #gone do
      redis.call('ZREM', q, gone[j])
    end
    redis.call('ZREMRANGEBYSCORE', e, '-inf', clock())
  end
  -- A member with no expiry (its t: entry evicted or deleted apart from
  -- q:) would never leave, and be given the key at every release: gone.
  while true do
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    if not head[1] or redis.call('ZSCORE', e, head[1]) then
      return head[1], head[2]
    end
    redis.call('ZREM', q, head[1])
  end
end
local function enqueue(meta, key, member, arrival, life)
  local q = meta .. 'q:' .. key
  local e = meta .. 't:' .. key
  arrival = tonumber(arrival)
  if arrival > clock() then arrival = clock() end
  if arrival < clock() - 1000 then arrival = clock() - 1000 end
  redis.call('ZADD', q, 'NX', arrival, member)
  redis.call('ZADD', e, clock() + life, member)
  if redis.call('PTTL', q) < life then redis.call('PEXPIRE', q, life) end
  if redis.call('PTTL', e) < life then redis.call('PEXPIRE', e, life) end
end
local function unpackPlace(packed)
  return string.match(packed, '^(%d+) (%d+) (.+)$')
end
local function handTo(meta, key, waiter)
  local sp = string.find(waiter, ' ', 1, true)
  local sp2 = string.find(waiter, ' ', sp + 1, true) or (#waiter + 1)
  local value = string.sub(waiter, sp + 1, sp2 - 1)
  local ttl = tonumber(string.sub(waiter, sp2 + 1)) or 0
  local given = ${releaseFlagLua()}
  if ttl > 0 then
    redis.call('SET', key, value, 'PX', ttl)
    redis.call('SET', meta .. 'g:' .. key, value, 'PX', ttl)
    given = ${releaseFlagLua('clock()')}
  end
  announce(meta .. 'w:' .. string.sub(waiter, 1, sp - 1), key,
    ${releaseMessageLua('key', 'value', 'given')})
end
`;

/**
 * `announce(channel, key, message)` of WAIT_QUEUE_LUA on a single server:
 * the waiter's process listens on `<meta>w:<listener id>`.
 */
const PUBLISH_LUA = `
local function announce(channel, key, message)
  redis.call('PUBLISH', channel, message)
end
`;

/**
 * `announce` on a Redis Cluster node: sharded pub/sub on a channel of the
 * key's slot (`<meta>w:<listener id>:<key>`, which holds the key's hash
 * tag), so the message stays on the shard that owns the key, where the
 * waiter's process listens (see `ShardSubscriber`); a plain PUBLISH would
 * cross every node of the cluster.
 */
const SPUBLISH_LUA = `
local function announce(channel, key, message)
  redis.call('SPUBLISH', channel .. ':' .. key, message)
end
`;

/** `announce(channel, key, message)` for a single server, or (`sharded`) a Cluster node. */
export function announceLua(sharded: boolean): string {
  return sharded ? SPUBLISH_LUA : PUBLISH_LUA;
}

/** The wait queue helpers for a single server, or (`sharded`) a Cluster. */
export function waitQueueLua(sharded = false): string {
  return announceLua(sharded) + WAIT_QUEUE_LUA;
}

/**
 * A queue place as the acquire and release scripts take it, in one
 * argument (most requests never read it, and every argument costs each
 * node a little): `<life> <arrival> <name>`, the name last because it holds
 * spaces. See `enqueue` and `unpackPlace` in WAIT_QUEUE_LUA.
 */
export function packPlace(life: number, arrival: number, name: string): string {
  return `${life} ${arrival} ${name}`;
}
