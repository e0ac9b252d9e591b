import calculateSlot from 'cluster-key-slot';

/** The hash slot of a key (CRC16 of its hash tag, or of the whole key). */
export function slotOf(key: string): number {
  return calculateSlot(key);
}

/**
 * Splits a script's keys by slot. `columns`: how many keys each resource
 * has, laid out column by column (`[lock1, lock2, counter1, counter2]` is 2
 * columns of 2), so that resource i's keys are `i, i + n, …`; the slot of
 * a resource is its first key's. Returns, per slot, the indexes of the
 * resources in it, in order; one group when every key shares a slot.
 */
export function groupBySlot(
  keys: readonly string[],
  columns: number,
): number[][] {
  const n = keys.length / columns;
  const first = slotOf(keys[0]);
  let i = 1;
  while (i < n && slotOf(keys[i]) === first) i++;
  if (i === n) return [Array.from({ length: n }, (_, j) => j)];
  const bySlot = new Map<number, number[]>();
  for (let j = 0; j < n; j++) {
    const slot = slotOf(keys[j]);
    const group = bySlot.get(slot);
    if (group) group.push(j);
    else bySlot.set(slot, [j]);
  }
  return [...bySlot.values()];
}

/** The keys of the resources `group`, column by column (see `groupBySlot`). */
export function keysOf(
  keys: readonly string[],
  columns: number,
  group: readonly number[],
): string[] {
  const n = keys.length / columns;
  const out: string[] = [];
  for (let c = 0; c < columns; c++)
    for (const j of group) out.push(keys[c * n + j]);
  return out;
}
