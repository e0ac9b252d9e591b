import { defineScript } from './lua-script.js';
import { waitQueueLua } from './wait-queue.lua.js';

/** The release script's source, for a single server or (`sharded`) a Cluster. */
function releaseSource(sharded: boolean): string {
  return (
    `
local leave = not ARGV[3] or string.sub(ARGV[3], 1, 1) == '1'
if #KEYS == 1
    and redis.call('EXISTS', ARGV[2] .. 'q:' .. KEYS[1]) == 0 then
  -- Nobody waits for it (the common case): a compare-and-delete, before
  -- the shared helpers are even created.
  local g = ARGV[2] .. 'g:' .. KEYS[1]
  if redis.call('GET', KEYS[1]) == ARGV[1]
      and (leave or redis.call('GET', g) ~= ARGV[1]) then
    redis.call('DEL', KEYS[1], g)
    return 2
  end
  return 0
end
` +
    waitQueueLua(sharded) +
    `
local meta, member = ARGV[2], ARGV[4] or ''
local deleted, reserved = 0, 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local queued = redis.call('EXISTS', meta .. 'q:' .. key) == 1
  if queued and leave then
    redis.call('ZREM', meta .. 'q:' .. key, member)
    redis.call('ZREM', meta .. 't:' .. key, member)
  end
  if redis.call('GET', key) == ARGV[1] and (leave
      or redis.call('GET', meta .. 'g:' .. key) ~= ARGV[1]) then
    redis.call('DEL', key, meta .. 'g:' .. key)
    deleted = deleted + 1
    if queued then
      -- A failed attempt whose caller is next anyway hands nothing: it
      -- tries again, and the key must not go to someone behind it here
      -- while the other nodes keep it for the caller.
      local waiter = nextWaiter(meta, key)
      if waiter and waiter ~= member then
        handTo(meta, key, waiter)
        local life, arrival, name =
          unpackPlace(string.sub(ARGV[3] or '', 3))
        if #KEYS == 1 and life then
          enqueue(meta, key, name, arrival, tonumber(life))
          reserved = 1
        end
      end
    end
  elseif queued and leave and redis.call('EXISTS', key) == 0 then
    -- A waiter leaving (it gave up, or was told and went away) while the
    -- key is free: the next one would hear of it only at its fallback
    -- retry, and newcomers are kept out meanwhile.
    local waiter = nextWaiter(meta, key)
    if waiter then handTo(meta, key, waiter) end
  end
end
return deleted * 2 + reserved
`
  );
}

/**
 * Deletes the keys of a lock on one node, but only those that still hold our
 * value: a key that expired and was taken by another holder is left alone.
 * A client-side GET then DEL would race with that expiry.
 *
 * KEYS: the lock keys. ARGV[1]: the lock value, ARGV[2]: the meta prefix,
 * ARGV[3]: `1` when the caller is done (it leaves the queues) or `0` when
 * it takes back a failed attempt and still waits (it keeps its place),
 * followed, to reserve a place (below), by ` <life> <arrival> <name>`: that
 * place's life in ms, its arrival (client clock, ms) and its name
 * (`<listener id> <new value> <lease>`); ARGV[4]: the caller's name in the
 * wait queues (`<listener id> <value> <lease>`). Packed, as in the acquire
 * script, and left out when they say nothing (`1`, no name: see
 * `releaseArgs`): most releases are uncontended. Sent with its meta keys
 * declared, as the acquire script.
 * Returns `deleted * 2 + reserved`: how many keys it deleted, and `1` when
 * it queued the reserved place (one integer: see the acquire script); read
 * it with `releaseReply`.
 *
 * Reserving: a holder that releases a contended key often asks again at
 * once (its process has more work for the same resource), and that
 * request would only be refused and queued behind the waiter just served:
 * a round trip to every node for nothing. So when the release hands the
 * key on, it queues the reserved place at the tail in the same call; a new acquire of
 * the caller's process adopts that place instead of asking (see
 * `Reservations`). Only for a single key, where the place is the whole
 * request.
 *
 * When someone else waits for a deleted key (see WAIT_QUEUE_LUA), the key
 * goes to the longest-waiting live waiter (given outright, or that waiter
 * is told to ask), on `<meta>w:<its listener id>`, a channel only its
 * process listens to (a broadcast would wake every waiting process for
 * every release). So does a free key when a waiter leaves its queue (it
 * gave up), as nobody else would tell the next one. Without waiters
 * nothing is written or published: an uncontended release is a
 * compare-and-delete plus a look for a queue.
 *
 * A failed attempt's take-back leaves a key that a release gave to the
 * caller (`g:<key>`): the caller counts that node from the message,
 * whatever its attempt did.
 */
export const RELEASE_SCRIPT = defineScript('release', releaseSource(false), {
  kinds: ['q:', 't:', 'g:'],
  prefixArg: 1,
  clusterSource: releaseSource(true),
});

/**
 * The arguments of {@link RELEASE_SCRIPT}, without the trailing ones that
 * say nothing (a caller that never waited and is done).
 */
export function releaseArgs(
  value: string,
  metaPrefix: string,
  name: string | undefined,
  leave: boolean,
  reserve: string | undefined,
): string[] {
  const flag = (leave ? '1' : '0') + (reserve ? ' ' + reserve : '');
  if (name) return [value, metaPrefix, flag, name];
  return flag === '1' ? [value, metaPrefix] : [value, metaPrefix, flag];
}

/** Reads a release script reply. */
export function releaseReply(reply: unknown): {
  deleted: number;
  reserved: boolean;
} {
  const code = Number(reply);
  return { deleted: Math.floor(code / 2), reserved: code % 2 === 1 };
}
