import type { LuaScript, ScriptCall } from '../scripts/lua-script.js';

/**
 * Where the meta prefix is in the arguments of the scripts that reach a
 * lock key's meta keys (its wait queue `q:`, the places' expiries `t:`,
 * the grant note `g:`), by script name.
 */
const META_PREFIX_ARG: ReadonlyMap<string, number> = new Map([
  ['acquire', 2],
  ['release', 1],
  ['keep', 2],
]);

/**
 * A call as a Redis Cluster node sends it: the script's Cluster variant,
 * with every meta key of its lock keys declared after its own keys, and
 * how many keys it reads itself last in ARGV (see `DECLARED_KEYS_LUA`).
 * `lockKeys`: how many of the keys are lock keys (the acquire script's
 * fencing counters follow them).
 */
export function declareMetaKeys(
  script: LuaScript,
  call: ScriptCall,
  lockKeys = call.keys.length,
): { script: LuaScript; keys: string[]; args: (string | number)[] } {
  const at = META_PREFIX_ARG.get(script.name);
  const variant = script.forCluster ?? script;
  if (at === undefined || variant === script)
    return { script: variant, keys: [...call.keys], args: [...call.args] };
  const meta = String(call.args[at]);
  const keys = [...call.keys];
  for (let i = 0; i < lockKeys; i++) {
    const key = call.keys[i];
    keys.push(`${meta}q:${key}`, `${meta}t:${key}`, `${meta}g:${key}`);
  }
  return { script: variant, keys, args: [...call.args, call.keys.length] };
}
