import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';
import { extendMany } from '../operations/extend.js';
import { rwModes } from './rw-lock-ops.js';

/**
 * The watchdog's batched extension of mixed locks: mutexes and permits in
 * one batch (`extendMany`), read/write locks one by one with their own
 * script (a failure marks the lock lost, as in the batch).
 */
export function extendAll(
  ctx: RedlockContext,
  locks: readonly Lock[],
): Promise<void> {
  if (!locks.some((lock) => rwModes.has(lock))) return extendMany(ctx, locks);
  const rest = locks.filter((lock) => !rwModes.has(lock));
  const rw = locks.filter((lock) => rwModes.has(lock));
  return Promise.all([
    rest.length ? extendMany(ctx, rest) : undefined,
    ...rw.map((lock) =>
      lock.isReleased || lock.isLost
        ? undefined
        : lock.extend().catch(() => undefined),
    ),
  ]).then(() => undefined);
}
