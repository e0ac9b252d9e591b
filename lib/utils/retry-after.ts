import { durationProblem, show } from '../core/util/validate.js';
import { LockNotAcquiredError } from '../errors/lock-not-acquired.error.js';

/**
 * What the `Retry-After` of an HTTP answer to a lock conflict (409, or 503
 * when the nodes are unreachable) says, in ms, rounded up to whole seconds
 * (at least 1): a fixed delay, or a function of the conflict. Set per
 * module (`RedlockModule.forRoot({ retryAfter })`) and per `@Locked`.
 * Without it, the header says the error's own `retryAfter`: the holder's
 * remaining lease, an upper bound of the wait while the holder is alive
 * but stops renewing. A lock kept alive by a watchdog always shows about
 * its whole `ttl`, though it is often freed much sooner (or renewed past
 * it): set `retryAfter` to what your critical sections take.
 *
 * @publicApi
 */
export type RetryAfter = number | ((conflict: LockNotAcquiredError) => number);

/** Settings recorded on conflicts by the call that met them. */
const advised = new WeakMap<LockNotAcquiredError, RetryAfter>();

/**
 * Records on a conflict the `retryAfter` of the call it rejected. The first
 * call to record wins: the innermost (`@Locked` over the module's).
 */
export function adviseRetryAfter(
  error: unknown,
  setting: RetryAfter | undefined,
): void {
  if (
    setting !== undefined &&
    error instanceof LockNotAcquiredError &&
    !advised.has(error)
  )
    advised.set(error, setting);
}

/**
 * The delay, in ms, to send with `error`: its recorded setting, or its own
 * hint when there is none, or the function throws or returns no duration
 * (an answer is being sent already: it must not fail now).
 */
export function retryAfterOf(error: LockNotAcquiredError): number {
  const setting = advised.get(error);
  let value: unknown = setting;
  if (typeof setting === 'function') {
    try {
      value = setting(error);
    } catch {
      value = undefined;
    }
  }
  return value !== undefined && !durationProblem(value, 'non-negative')
    ? (value as number)
    : error.retryAfter;
}

/** What is wrong with `value` as a `retryAfter` setting, or `undefined`. */
export function retryAfterProblem(value: unknown): string | undefined {
  if (value === undefined || typeof value === 'function') return undefined;
  if (!durationProblem(value, 'non-negative')) return undefined;
  return `must be a duration in ms (a finite number >= 0) or a function of the conflict returning one, got ${show(value)}`;
}
