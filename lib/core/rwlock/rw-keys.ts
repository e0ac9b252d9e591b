/**
 * The keys a read/write lock's scripts are sent for its lock keys: three
 * per resource, the lock key, its readers and its writer intent (see
 * `RW_ACQUIRE_SCRIPT`). On a Cluster the lock key carries a hash tag, so
 * the three share its slot.
 */
export function rwKeys(metaPrefix: string, keys: readonly string[]): string[] {
  const out = new Array<string>(keys.length * 3);
  keys.forEach((key, i) => {
    out[3 * i] = key;
    out[3 * i + 1] = `${metaPrefix}rd:${key}`;
    out[3 * i + 2] = `${metaPrefix}wi:${key}`;
  });
  return out;
}
