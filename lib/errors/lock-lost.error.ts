import { RedlockError } from './redlock.error.js';

/**
 * The lock was lost while its holder's work ran: an extension failed, the
 * validity ran out (for example after the process was paused), or `maxHold`
 * was reached. `lock.signal` aborts with this error.
 *
 * When a `run()` callback or `@Locked` method settles after its lock was lost
 * (and `onLockLost` is `'throw'`), the call rejects with this error and
 * nothing is hidden: `result` holds what the work returned, `error` what it
 * threw, and `settled` says which.
 *
 * @publicApi
 */
export class LockLostError extends RedlockError {
  /** `'fulfilled'` or `'rejected'` once the work settled; `undefined` while it still runs. */
  settled?: 'fulfilled' | 'rejected';
  /** The work's return value, when it fulfilled. */
  result?: unknown;
  /** The work's own error, when it rejected (also set as `cause`). */
  error?: unknown;

  constructor(
    readonly resources: readonly string[],
    /** Why the lock was lost. */
    readonly reason: string,
  ) {
    super(
      `Lock on ${resources.map((r) => `"${r}"`).join(', ')} was lost: ${reason}`,
    );
  }

  /** A copy that carries the outcome of the work that ran under the lost lock. */
  withOutcome(outcome: PromiseSettledResult<unknown>): LockLostError {
    const copy = new LockLostError(this.resources, this.reason);
    copy.settled = outcome.status;
    if (outcome.status === 'fulfilled') copy.result = outcome.value;
    else {
      copy.error = outcome.reason;
      copy.cause = outcome.reason;
    }
    return copy;
  }
}
