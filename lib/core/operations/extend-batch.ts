import { slotOf } from '../cluster/key-slot.js';
import type { Lock } from '../lock.js';
import { extendManyArgs } from '../scripts/index.js';
import type { ScriptCall } from '../scripts/lua-script.js';

/** Locks per extend-many script call (a pipeline per node carries all calls of a tick). */
const EXTEND_CHUNK = 500;

/**
 * The extend-many calls of one watchdog tick for a kind of node, and how
 * to read their replies: call `c`'s `j`-th answer is about lock
 * `owners[c][j]`, and a lock stands on the node when all its `parts[l]`
 * answers say `1`.
 */
export interface ExtendBatch {
  readonly calls: ScriptCall[];
  readonly owners: number[][];
  readonly parts: Uint8Array;
}

/** For a single server: every lock once, in chunks. */
export function batchAll(
  locks: readonly Lock[],
  leases: readonly number[],
): ExtendBatch {
  const entries = locks.map((lock, l) => ({ l, keys: lock.keys }));
  return chunked(locks, leases, entries, new Uint8Array(locks.length).fill(1));
}

/**
 * For a Redis Cluster: chunks of one slot each (a script reaches one
 * slot), a lock whose resources span slots split into one entry per slot.
 */
export function batchBySlot(
  locks: readonly Lock[],
  leases: readonly number[],
): ExtendBatch {
  const bySlot = new Map<number, { l: number; keys: string[] }[]>();
  const parts = new Uint8Array(locks.length);
  locks.forEach((lock, l) => {
    const ofLock = new Map<number, string[]>();
    for (const key of lock.keys) {
      const slot = slotOf(key);
      const keys = ofLock.get(slot);
      if (keys) keys.push(key);
      else ofLock.set(slot, [key]);
    }
    parts[l] = ofLock.size;
    for (const [slot, keys] of ofLock) {
      const list = bySlot.get(slot);
      if (list) list.push({ l, keys });
      else bySlot.set(slot, [{ l, keys }]);
    }
  });
  const calls: ScriptCall[] = [];
  const owners: number[][] = [];
  for (const entries of bySlot.values()) {
    const batch = chunked(locks, leases, entries, parts);
    calls.push(...batch.calls);
    owners.push(...batch.owners);
  }
  return { calls, owners, parts };
}

function chunked(
  locks: readonly Lock[],
  leases: readonly number[],
  entries: readonly { l: number; keys: readonly string[] }[],
  parts: Uint8Array,
): ExtendBatch {
  const calls: ScriptCall[] = [];
  const owners: number[][] = [];
  for (let i = 0; i < entries.length; i += EXTEND_CHUNK) {
    const chunk = entries.slice(i, i + EXTEND_CHUNK);
    calls.push(
      extendManyArgs(
        chunk.map(({ l, keys }) => ({ keys, value: locks[l].value })),
        chunk.map(({ l }) => Math.ceil(leases[l])),
      ),
    );
    owners.push(chunk.map(({ l }) => l));
  }
  return { calls, owners, parts };
}
