import { LUA_DECIMAL_LESS } from './decimal-less.lua.js';
import { defineScript } from './lua-script.js';

/**
 * Second round of a fenced acquire: stores each proposed token on one node
 * if, and only if, it is above the node's counter for that resource.
 *
 * KEYS: the counter keys. ARGV[i]: the proposed token of KEYS[i] (canonical
 * decimal string). Returns `{accepted, prior1, ..., priorn}`: `accepted` is 1
 * when every proposal was above its counter (all are now stored), 0 when at
 * least one was not; `prior` is each counter before the call (`"0"` when
 * absent), from which the client proposes again.
 *
 * A proposal equal to the counter is refused on purpose: two acquires can
 * never both have the same token accepted by intersecting quorums, so
 * tokens are unique as well as increasing (see lib/core/fencing.md). The
 * counters have no expiry: forgetting one would let tokens go back.
 */
export const FENCE_SCRIPT = defineScript(
  'fence',
  `${LUA_DECIMAL_LESS}
local reply = {1}
for i = 1, #KEYS do
  local prior = redis.call('GET', KEYS[i]) or '0'
  if less(prior, ARGV[i]) then
    redis.call('SET', KEYS[i], ARGV[i])
  else
    reply[1] = 0
  end
  reply[i + 1] = prior
end
return reply
`,
);
