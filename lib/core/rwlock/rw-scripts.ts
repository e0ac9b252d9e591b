import { RW_EXTEND_SCRIPT, RW_RELEASE_SCRIPT } from '../scripts/index.js';
import type { ShapeScripts } from '../shapes/scripted-lock-ops.js';
import { rwKeys } from './rw-keys.js';

/** The extend and release scripts of read/write locks, for keys under `metaPrefix`. */
export function rwScripts(metaPrefix: string): ShapeScripts {
  return {
    extend: (lock, ms) => ({
      script: RW_EXTEND_SCRIPT,
      keys: rwKeys(metaPrefix, lock.keys),
      args: [lock.value, ms],
    }),
    release: (keys, value, takeBack) => ({
      script: RW_RELEASE_SCRIPT,
      keys: rwKeys(metaPrefix, keys),
      args: [value, takeBack ? '1' : '0'],
    }),
  };
}
