import type { RedlockContext } from '../context.js';
import type { AcquireTrace } from '../events/trace.js';
import type { Lock } from '../lock.js';
import { votesOf } from '../nodes/poll.js';
import { randomValue } from '../util/lock-value.js';
import type { AcquireCall } from './acquire-call.js';
import { attempt, type AttemptResult } from './attempt.js';
import { notAcquired } from './not-acquired.js';
import { sendRelease } from './send-release.js';
import { stopReason } from './stop.js';

/**
 * A call that makes one attempt and no more: `tryAcquire()`, and an
 * `acquire()` whose `waitTimeout` is 0. Resolves with the lock, or with
 * what `failed` makes of the attempt that was not held (it may throw; a
 * function of the module rather than a closure per call).
 *
 * Not an async function, and apart from the waiting loop of `acquire()`:
 * most acquires in applications are single uncontended attempts, and in a
 * fresh process each async layer on that path ran unoptimised for its
 * first thousand locks or so (docs/performance.md).
 */
export function attemptOnce<T>(
  ctx: RedlockContext,
  call: AcquireCall,
  trace: AcquireTrace | undefined,
  failed: (ctx: RedlockContext, call: AcquireCall, result: AttemptResult) => T,
): Promise<Lock | T> {
  const { resources, keys, timing, fencing, signal } = call;
  // quit() or an abort while the caller waited for its local turn.
  const stop = stopReason(ctx, resources, 0, signal);
  if (stop !== undefined) return Promise.reject(stop);
  const value = randomValue();
  return attempt(ctx, resources, keys, value, timing, fencing).then(
    (result) => {
      if (trace) {
        trace.attempts = 1;
        trace.nodes = votesOf(result.ballots);
      }
      if (!result.lock) return failed(ctx, call, result);
      const late = stopReason(ctx, resources, 1, signal);
      if (late === undefined) return result.lock;
      // Granted while quit() ran (the caller could not release it) or
      // after the caller gave up: take the keys back, while the
      // connections are open.
      return sendRelease(ctx, ctx.nodes, keys, value, timing.nodeTimeout, {
        leave: true,
      }).then(() => {
        throw late;
      });
    },
  );
}

/** `failed` of {@link attemptOnce} for `acquire()`: the attempt's error. */
export function notAcquiredOnce(
  ctx: RedlockContext,
  call: AcquireCall,
  result: AttemptResult,
): never {
  throw notAcquired(ctx, call.resources, 1, result, call.timing.ttl);
}
