import {
  PERMIT_EXTEND_SCRIPT,
  PERMIT_RELEASE_SCRIPT,
  permitsMark,
} from '../scripts/index.js';
import type { ShapeScripts } from '../shapes/scripted-lock-ops.js';
import { resourceKeyOf } from './permit-slots.js';

/**
 * The keys the permit scripts are sent for a lock's slot keys, column by
 * column: the resource keys, the slot keys, the holders.
 */
export function permitScriptKeys(
  metaPrefix: string,
  slotKeys: readonly string[],
): string[] {
  const keys = slotKeys.map(resourceKeyOf);
  return [...keys, ...slotKeys, ...keys.map((k) => holdersKey(metaPrefix, k))];
}

/** The holders of a semaphore's permits on a node (see `PERMIT_ACQUIRE_SCRIPT`). */
export function holdersKey(metaPrefix: string, key: string): string {
  return `${metaPrefix}ph:${key}`;
}

/** The extend and release scripts of semaphore permits, for keys under `metaPrefix`. */
export function permitScripts(metaPrefix: string): ShapeScripts {
  return {
    extend: (lock, ms) => ({
      script: PERMIT_EXTEND_SCRIPT,
      keys: permitScriptKeys(metaPrefix, lock.keys),
      args: [lock.value, ms, permitsMark(lock.shape?.permits ?? 0)],
    }),
    release: (keys, value) => ({
      script: PERMIT_RELEASE_SCRIPT,
      keys: permitScriptKeys(metaPrefix, keys),
      args: [value],
    }),
  };
}
