/**
 * The keys a read/write lock's scripts are sent for its lock keys: three
 * per resource, column by column (the lock keys, then their readers, then
 * their writer intents; see `RW_ACQUIRE_SCRIPT`). On a Cluster the lock
 * key carries a hash tag, so a resource's three keys share its slot.
 */
export function rwKeys(metaPrefix: string, keys: readonly string[]): string[] {
  const n = keys.length;
  const out = new Array<string>(n * 3);
  keys.forEach((key, i) => {
    out[i] = key;
    out[n + i] = `${metaPrefix}rd:${key}`;
    out[2 * n + i] = `${metaPrefix}wi:${key}`;
  });
  return out;
}
