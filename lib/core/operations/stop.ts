import { LockNotAcquiredError } from '../../errors/lock-not-acquired.error.js';
import type { RedlockContext } from '../context.js';
import { abortReason } from '../util/abort.js';

/**
 * Why a call must stop now, if it must: its caller aborted (the signal's
 * reason), or `quit()` ran. `undefined` to go on.
 */
export function stopReason(
  ctx: Pick<RedlockContext, 'closed'>,
  resources: readonly string[],
  attempts: number,
  signal: AbortSignal | undefined,
): Error | undefined {
  // Thrown as it is, whatever the caller aborted with.
  if (signal?.aborted) return abortReason(signal);
  return ctx.closed ? closedError(resources, attempts) : undefined;
}

/** The error of a call refused, or given up, because `quit()` ran. */
export function closedError(
  resources: readonly string[],
  attempts: number,
): LockNotAcquiredError {
  return new LockNotAcquiredError(resources, attempts, 'closed', [], 0);
}
