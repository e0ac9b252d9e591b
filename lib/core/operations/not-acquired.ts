import { LockNotAcquiredError } from '../../errors/lock-not-acquired.error.js';
import type { RedlockContext } from '../context.js';
import { votesOf } from '../nodes/poll.js';
import type { AttemptResult } from './attempt.js';

/**
 * The error of an acquire that gave up after `attempts`, from its last
 * attempt. Its `retryAfter` is the holder's remaining lease; when the
 * nodes told none (a waiter queued before us goes first), the `ttl` that
 * waiter gets, not a short delay: the same conflict should advise the
 * same wait, whichever node answered first.
 */
export function notAcquired(
  ctx: RedlockContext,
  resources: readonly string[],
  attempts: number,
  result: AttemptResult,
  ttl: number,
): LockNotAcquiredError {
  const reason = result.reason ?? 'busy';
  return new LockNotAcquiredError(
    resources,
    attempts,
    reason,
    votesOf(result.ballots),
    result.holderTtl ??
      (reason === 'busy' ? ttl : ctx.config.timing.retryDelay),
  );
}
