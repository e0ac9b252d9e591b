import { wakeListKey } from './rw-wake-list.js';

/**
 * The keys a read/write lock's scripts are sent for its lock keys: four
 * per resource, column by column (the lock keys, then their readers, their
 * writer intents, their wake lists; see `RW_ACQUIRE_SCRIPT`). On a Cluster
 * the lock key carries a hash tag, so a resource's keys share its slot.
 */
export function rwKeys(metaPrefix: string, keys: readonly string[]): string[] {
  const n = keys.length;
  const out = new Array<string>(n * 4);
  keys.forEach((key, i) => {
    out[i] = key;
    out[n + i] = `${metaPrefix}rd:${key}`;
    out[2 * n + i] = `${metaPrefix}wi:${key}`;
    out[3 * n + i] = wakeListKey(metaPrefix, key);
  });
  return out;
}
