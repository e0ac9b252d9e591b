import { LUA_DECIMAL_LESS } from './decimal-less.lua.js';
import { defineScript } from './lua-script.js';

/**
 * A guarded write: runs a list of commands only if the fencing token is at
 * least the highest already accepted for the resource, and records it.
 *
 * KEYS[1]: the resource's fence record; KEYS[i + 1]: the key of command i.
 * ARGV[1]: the token; ARGV[2]: the number of commands; then, per command,
 * its name, its argument count and its arguments (after the key).
 * Returns `{1, {reply1, ...}}` when applied, `{0, highest}` when the token is
 * older than `highest` (nothing written).
 *
 * An equal token is accepted: the same holder may write several times, and
 * two holders never get the same token. The check, the record and the
 * commands run as one script, so no other write slips in between. As with
 * MULTI, a command that fails at run time (a wrong type) does not undo the
 * ones before it.
 */
export const FENCED_WRITE_SCRIPT = defineScript(
  'fenced-write',
  `${LUA_DECIMAL_LESS}
local token = ARGV[1]
local highest = redis.call('GET', KEYS[1])
if highest and less(token, highest) then
  return {0, highest}
end
if highest ~= token then
  redis.call('SET', KEYS[1], token)
end
local replies = {}
local a = 3
for i = 1, tonumber(ARGV[2]) do
  local argc = tonumber(ARGV[a + 1])
  local call = {ARGV[a], KEYS[i + 1]}
  for j = 1, argc do
    call[j + 2] = ARGV[a + 1 + j]
  end
  a = a + 2 + argc
  replies[i] = redis.call(unpack(call))
end
return {1, replies}
`,
);
