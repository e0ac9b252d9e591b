import type { LuaScript, ScriptCall } from './lua-script.js';

/**
 * A call as a node is sent it, every key the script may touch declared:
 * for a script that reaches its lock keys' meta keys (see `MetaKeysRule`),
 * those it may touch of each lock key after the script's own keys, and how
 * many keys it reads itself last in ARGV (see `DECLARED_KEYS_LUA`); any
 * other call as it is (not copied). On every node kind: servers that
 * refuse undeclared keys are single servers too, and a Cluster routes by
 * them (docs/cluster.md). Declared on every call, though an uncontended
 * acquire or release only looks for a queue: the client cannot know
 * beforehand which path a node takes.
 */
export function declareMetaKeys(
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): ScriptCall {
  const rule = script.metaKeys;
  if (rule === undefined) return { keys, args };
  // A poll sends one request's arrays to every node: declared once.
  if (keys === last.keys && args === last.args && script === last.script)
    return last.call;
  const meta = String(args[rule.prefixArg]);
  const own = keys.length;
  // With fencing, the lock keys are followed by their counters.
  const lockKeys =
    rule.fencingArg !== undefined && String(args[rule.fencingArg]) === '1'
      ? own / 2
      : own;
  // Written by index, not spread: this runs for every acquire and release.
  const kinds = rule.kinds;
  const declared = new Array<string>(own + kinds.length * lockKeys);
  for (let i = 0; i < own; i++) declared[i] = keys[i];
  let at = own;
  for (let i = 0; i < lockKeys; i++)
    for (let k = 0; k < kinds.length; k++)
      declared[at++] = meta + kinds[k] + keys[i];
  const withCount = new Array<string | number>(args.length + 1);
  for (let i = 0; i < args.length; i++) withCount[i] = args[i];
  withCount[args.length] = own;
  const call = { keys: declared, args: withCount };
  last = { script, keys, args, call };
  return call;
}

/**
 * The last call declared, by the identity of its arrays (requests never
 * change theirs once sent): the nodes of a poll share it.
 */
let last: {
  script?: LuaScript;
  keys?: readonly string[];
  args?: readonly (string | number)[];
  call: ScriptCall;
} = { call: { keys: [], args: [] } };
