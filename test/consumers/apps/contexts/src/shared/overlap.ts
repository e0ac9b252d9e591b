/**
 * Counts the calls inside a critical section, per resource: `max` above 1
 * means two calls overlapped. Module-level, so that two app instances in
 * one test process share it, as two replicas share a database.
 */
export interface Overlap {
  active: number;
  max: number;
  entries: number;
}

const sections = new Map<string, Overlap>();

export function overlapOf(resource: string): Overlap {
  let overlap = sections.get(resource);
  if (!overlap)
    sections.set(resource, (overlap = { active: 0, max: 0, entries: 0 }));
  return overlap;
}

/** Runs `work` as one entry of `resource`'s critical section, `ms` long. */
export async function critical<T>(
  resource: string,
  ms: number,
  work: () => T,
): Promise<T> {
  const overlap = overlapOf(resource);
  overlap.active++;
  overlap.entries++;
  overlap.max = Math.max(overlap.max, overlap.active);
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return work();
  } finally {
    overlap.active--;
  }
}
