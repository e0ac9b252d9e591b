import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';
import { extendMany } from '../operations/extend.js';

/**
 * The watchdog's batched extension: mutexes in one batch (`extendMany`),
 * semaphores and read/write locks one by one with their own scripts (a
 * failure marks the lock lost, as in the batch).
 */
export function extendAll(
  ctx: RedlockContext,
  locks: readonly Lock[],
): Promise<void> {
  if (!locks.some((lock) => lock.shape)) return extendMany(ctx, locks);
  const rest = locks.filter((lock) => !lock.shape);
  const shaped = locks.filter((lock) => lock.shape);
  return Promise.all([
    rest.length ? extendMany(ctx, rest) : undefined,
    ...shaped.map((lock) =>
      lock.isReleased || lock.isLost
        ? undefined
        : lock.extend().catch(() => undefined),
    ),
  ]).then(() => undefined);
}
