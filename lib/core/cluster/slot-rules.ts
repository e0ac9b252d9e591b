import type { LuaScript } from '../scripts/lua-script.js';

/**
 * How a script whose keys span several hash slots runs on a Redis Cluster:
 * once per slot, each run with the keys (and per-key arguments) of its
 * slot, and the replies merged into the one reply the caller reads.
 */
export interface SlotRule {
  /** How many keys each resource has (see `groupBySlot`). */
  columns(args: readonly (string | number)[]): number;
  /** The arguments of the run for `group` (default: all of them). */
  argsFor?(
    args: readonly (string | number)[],
    group: readonly number[],
  ): (string | number)[];
  /**
   * True for a script whose resources must share one slot: refused before
   * anything is sent when they do not.
   */
  readonly oneSlot?: boolean;
  /** The reply of the whole call from the replies of each slot's run. */
  merge(replies: readonly unknown[], groups: readonly number[][]): unknown;
}

/** `1` when every run answered `1`, else `0` (extend, recreate). */
const allOrNothing: SlotRule = {
  columns: () => 1,
  merge: (replies) => (replies.every((r) => Number(r) === 1) ? 1 : 0),
};

/** Each run's count of deleted keys, added (release: `deleted * 2`). */
const deletedKeys: SlotRule = {
  columns: () => 1,
  merge: (replies) =>
    replies.reduce<number>((sum, r) => sum + Math.floor(Number(r) / 2) * 2, 0),
};

/** The fence script: one argument per key, `{ok, prior1, …}` per run. */
const fence: SlotRule = {
  columns: () => 1,
  argsFor: (args, group) => group.map((j) => args[j]),
  merge(replies, groups) {
    const n = groups.reduce((sum, g) => sum + g.length, 0);
    const out: unknown[] = new Array<unknown>(n + 1);
    out[0] = 1;
    replies.forEach((reply, r) => {
      const [ok, ...priors] = reply as unknown[];
      if (Number(ok) !== 1) out[0] = 0;
      groups[r].forEach((j, k) => (out[j + 1] = priors[k]));
    });
    return out;
  },
};

/**
 * The acquire of a semaphore's permits or of a read/write lock: each
 * resource's keys share its slot, and resources in several slots are
 * refused before anything is sent (`oneSlot`): a grant in one slot and a
 * refusal in another would need the mutex's take-back across slots.
 */
function oneSlot(
  columns: (args: readonly (string | number)[]) => number,
): SlotRule {
  return {
    columns,
    oneSlot: true,
    merge: () => {
      throw new Error('unreachable: a one-slot script is never split');
    },
  };
}

/** `1` when every run answered `1` (extend), for keys in `n` columns. */
function allOrNothingOf(n: number): SlotRule {
  return { ...allOrNothing, columns: () => n };
}

/** Each run's count of released resources, added (for keys in `n` columns). */
function releasedOf(n: number): SlotRule {
  return {
    columns: () => n,
    merge: (replies) => replies.reduce<number>((sum, r) => sum + Number(r), 0),
  };
}

/**
 * The rules of the scripts that may be sent keys of several slots, by
 * script name. The acquire script is not here: a refusal in one slot must
 * take back the others (see `ClusterNode`). Scripts of one resource
 * (inspect, keep) never span slots.
 */
export const SLOT_RULES: ReadonlyMap<string, SlotRule> = new Map([
  ['extend', allOrNothing],
  ['recreate', allOrNothing],
  ['release', deletedKeys],
  ['fence', fence],
  // Extend, release: resource keys, slot keys, holders.
  // Resource keys, holders, c candidate slots (and counters with fencing).
  [
    'permit-acquire',
    oneSlot((args) => 2 + Number(args[4]) + (String(args[3]) === '1' ? 1 : 0)),
  ],
  ['permit-extend', allOrNothingOf(3)],
  ['permit-release', releasedOf(3)],
  // Lock keys, readers, writer intents.
  ['rw-acquire', oneSlot(() => 3)],
  ['rw-extend', allOrNothingOf(3)],
  ['rw-release', releasedOf(3)],
  // One resource's keys (inspect() of a semaphore, of a read/write lock).
  ['inspect-permits', oneSlot(() => 1)],
  ['inspect-rw', oneSlot(() => 1)],
]);

/** The rule of `script`, or an error for one that cannot be split. */
export function slotRuleOf(script: LuaScript): SlotRule {
  const rule = SLOT_RULES.get(script.name);
  if (!rule)
    throw new Error(
      `the ${script.name} script cannot run on keys of several hash slots`,
    );
  return rule;
}
