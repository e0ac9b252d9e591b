import type { LuaScript } from '../scripts/lua-script.js';
import { acquireReply, releaseArgs, RELEASE_SCRIPT } from '../scripts/index.js';
import { groupBySlot, keysOf } from './key-slot.js';

/** Runs a script on the keys of one slot of a Cluster node. */
type SendToSlot = (
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

/**
 * How many keys the acquire script has per resource: the lock key, and
 * with fencing (`ARGV[4]` `1`) its counter after all the lock keys.
 */
export function acquireColumns(args: readonly (string | number)[]): 1 | 2 {
  return String(args[3]) === '1' ? 2 : 1;
}

/**
 * The acquire script on a Cluster node, once per slot, all at once.
 * Granted in every slot: granted (with fencing, the counters in the order
 * of the keys). Refused in a slot: the grants of the others are taken back
 * (the caller keeps its queue places), then that refusal is the reply, so
 * a refusal leaves no key, as on a single server. An error in a slot is
 * the reply, and the caller's take-back covers every slot.
 */
export async function acquireAcrossSlots(
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
  send: SendToSlot,
): Promise<unknown> {
  const columns = acquireColumns(args);
  const fencing = columns === 2;
  const groups = groupBySlot(keys, columns);
  if (groups.length === 1) return send(script, keys, args);
  const runs = await Promise.allSettled(
    groups.map((group) => send(script, keysOf(keys, columns, group), args)),
  );
  const failed = runs.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  const replies = runs.map((r) => (r as PromiseFulfilledResult<unknown>).value);
  const readings = replies.map(acquireReply);
  const refused = readings.findIndex((r) => !r.granted);
  if (refused >= 0) {
    const taken = groups.filter((_, r) => readings[r].granted);
    if (taken.length) await takeBack(taken, keys, columns, args, send);
    return replies[refused];
  }
  if (!fencing) return 1;
  const merged: unknown[] = new Array<unknown>(keys.length / 2 + 2);
  merged[0] = 1;
  merged[1] = 0;
  replies.forEach((reply, r) =>
    groups[r].forEach((j, k) => (merged[j + 2] = (reply as unknown[])[k + 2])),
  );
  return merged;
}

/** Releases the lock keys of `groups` as a failed attempt's take-back. */
async function takeBack(
  groups: readonly number[][],
  keys: readonly string[],
  columns: number,
  args: readonly (string | number)[],
  send: SendToSlot,
): Promise<void> {
  const [value, , meta, , place] = args.map(String);
  // The place is `<life> <arrival> <name>`: the name keeps the queues.
  const name = place?.split(' ').slice(2).join(' ');
  const lockKeys = keys.slice(0, keys.length / columns);
  await Promise.all(
    groups.map((group) =>
      send(
        RELEASE_SCRIPT,
        group.map((j) => lockKeys[j]),
        releaseArgs(value, meta, name, place === undefined, undefined),
      ),
    ),
  );
}
