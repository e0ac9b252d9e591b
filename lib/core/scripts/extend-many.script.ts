import { defineScript } from './lua-script.js';

/**
 * The extend script for many locks in one call (the batched watchdog): each
 * lock is extended all or nothing, only where every key still holds its
 * value, never re-creating an expired key.
 *
 * KEYS: the keys of every lock, lock after lock. ARGV[1]: the number of
 * locks, ARGV[2]: the common lease in ms, then one argument per lock: its
 * value, or for a lock with more than one key or another lease,
 * `<value> <key count> <lease>` (values never hold a space). One argument
 * per lock, not three: the watchdog of 10,000 held locks sends them all
 * every tick, and the client's CPU goes mostly to writing arguments.
 * Returns one 1 (extended) or 0 per lock, in order. Build the arguments
 * with `extendManyArgs`.
 */
export const EXTEND_MANY_SCRIPT = defineScript(
  'extend-many',
  `
local out = {}
local k = 1
local common = ARGV[2]
for l = 1, tonumber(ARGV[1]) do
  local value, n, ttl = ARGV[l + 2], 1, common
  local first = string.find(value, ' ', 1, true)
  if first then
    local second = string.find(value, ' ', first + 1, true)
    n = tonumber(string.sub(value, first + 1, second - 1))
    ttl = string.sub(value, second + 1)
    value = string.sub(value, 1, first - 1)
  end
  local ok = 1
  for i = k, k + n - 1 do
    if redis.call('GET', KEYS[i]) ~= value then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for i = k, k + n - 1 do
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
  out[l] = ok
  k = k + n
end
return out
`,
);

/**
 * The keys and arguments of one {@link EXTEND_MANY_SCRIPT} call for `locks`,
 * each extended by its lease in `leases` (ms, whole).
 */
export function extendManyArgs(
  locks: readonly {
    readonly keys: readonly string[];
    readonly value: string;
  }[],
  leases: readonly number[],
): { keys: string[]; args: (string | number)[] } {
  const common = leases[0];
  const keys: string[] = [];
  const args: (string | number)[] = [locks.length, common];
  locks.forEach((lock, i) => {
    keys.push(...lock.keys);
    args.push(
      lock.keys.length === 1 && leases[i] === common
        ? lock.value
        : `${lock.value} ${lock.keys.length} ${leases[i]}`,
    );
  });
  return { keys, args };
}
