import type { LockMode } from '../config/options.js';
import type { Lock } from '../lock.js';

/** What a lock of a shape other than the mutex is: a permit, or a side of a read/write lock. */
export type LockShape =
  | { readonly permits: number; readonly mode?: undefined }
  | { readonly mode: LockMode; readonly permits?: undefined };

/**
 * The shape of each semaphore or read/write lock handed out (a mutex has
 * none): such locks have scripts of their own, and the watchdog extends
 * them one by one.
 */
export const shapedLocks = new WeakMap<Lock, LockShape>();
