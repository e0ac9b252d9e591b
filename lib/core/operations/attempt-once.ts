import type { RedlockContext } from '../context.js';
import type { AcquireTrace } from './trace.js';
import type { Lock } from '../lock.js';
import type { ResolvedTiming } from '../config/timing.js';
import { votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { randomValue } from '../util/lock-value.js';
import type { AcquireCall } from './acquire-call.js';
import { attempt, type AttemptResult } from './attempt.js';
import { notAcquired } from './not-acquired.js';
import { sendRelease } from '../nodes/send-release.js';
import { stopReason } from './stop.js';

/**
 * A call that makes one attempt and no more: `tryAcquire()`, and an
 * `acquire()` whose `waitTimeout` is 0. Resolves with the lock, or with
 * what `failed` makes of the attempt that was not held (it may throw; a
 * function of the module rather than a closure per call).
 *
 * Not an async function, and apart from the waiting loop of `acquire()`:
 * most acquires are single uncontended attempts, and each async layer on
 * that path slowed a fresh process (docs/performance.md).
 */
export function attemptOnce<T>(
  ctx: RedlockContext,
  call: AcquireCall,
  trace: AcquireTrace | undefined,
  failed: (
    ctx: RedlockContext,
    call: AcquireCall,
    result: AttemptResult,
    attempts: number,
  ) => T,
  attempts = 1,
): Promise<Lock | T> {
  const { resources, keys, timing, fencing, signal } = call;
  // quit() or an abort while the caller waited for its local turn.
  const stop = stopReason(ctx, resources, attempts - 1, signal);
  if (stop !== undefined) return Promise.reject(stop);
  const value = randomValue();
  // One node timeout for the attempt: a failed one settles by then.
  const settleBy = ctx.clock.now() + timing.nodeTimeout;
  return attempt(
    ctx,
    resources,
    keys,
    value,
    timing,
    fencing,
    undefined,
    settleBy,
    call.shape,
  ).then((result) => {
    if (trace) {
      trace.attempts = attempts;
      trace.nodes = votesOf(result.ballots);
    }
    if (!result.lock)
      return attempts === 1 && isSplitVote(result)
        ? afterSplit(timing).then(() =>
            attemptOnce(ctx, call, trace, failed, 2),
          )
        : failed(ctx, call, result, attempts);
    const late = stopReason(ctx, resources, attempts, signal);
    if (late === undefined) return result.lock;
    // Granted while quit() ran (the caller could not release it) or
    // after the caller gave up: take the keys back, while the
    // connections are open.
    return sendRelease(ctx, ctx.nodes, keys, value, timing.nodeTimeout, {
      leave: true,
    }).then(() => {
      throw late;
    });
  });
}

/**
 * Callers that try at the same moment can split the nodes between them
 * (each granted by one node of three) so that none holds a quorum and all
 * give up, though nobody holds the lock: the replicas of a scheduled job
 * whose ticks fire together would all skip it. An attempt that some node
 * granted and a quorum refused is tried once more, after a random delay
 * (the contenders draw different ones, and each takes its grants back
 * first); one refused by every node is not.
 */
function isSplitVote(result: AttemptResult): boolean {
  return result.reason === 'busy' && countGranted(result.ballots) > 0;
}

/** Half a retry delay, plus up to another half and the jitter, at random. */
function afterSplit(timing: ResolvedTiming): Promise<void> {
  const ms =
    timing.retryDelay / 2 +
    Math.random() * (timing.retryDelay / 2 + timing.retryJitter);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `failed` of {@link attemptOnce} for `acquire()`: the attempt's error. */
export function notAcquiredOnce(
  ctx: RedlockContext,
  call: AcquireCall,
  result: AttemptResult,
  attempts: number,
): never {
  throw notAcquired(ctx, call.resources, attempts, result, call.timing.ttl);
}
