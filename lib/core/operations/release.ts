import type { RedlockContext } from '../context.js';
import type { Lock, ReleaseResult } from '../lock.js';

/**
 * See `Lock.release`: the lock is no longer the caller's (`quit()` will
 * not release it again), and contention decides what its release does.
 */
export function releaseLock(
  ctx: RedlockContext,
  lock: Lock,
): Promise<ReleaseResult> {
  ctx.held.delete(lock);
  return ctx.contention.release(lock);
}
