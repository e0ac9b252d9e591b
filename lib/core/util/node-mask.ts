/**
 * Node `i`'s bit in the masks of nodes heard from or that gave a key. Past
 * 31 nodes the bits run out: such a node never counts as given (the waiter
 * asks instead) and a waiter it tells wakes by the grace timer.
 */
export function nodeBit(i: number): number {
  return i < 31 ? 1 << i : 0;
}

/** How many nodes a mask names. */
export function bitCount(mask: number): number {
  let count = 0;
  for (let v = mask; v; v &= v - 1) count++;
  return count;
}
