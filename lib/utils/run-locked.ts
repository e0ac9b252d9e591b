import type { Lock } from '../core/lock.js';
import type { LockManager } from '../core/lock-manager.js';
import type { RunOptions } from '../core/config/options.js';
import { normalizeResources } from '../core/config/resources.js';
import { checkRunOptions } from '../core/config/call-options.js';
import type { LockLostError } from '../errors/lock-lost.error.js';
import type { LockNotAcquiredError } from '../errors/lock-not-acquired.error.js';
import { LockServiceUnavailableError } from '../errors/lock-service-unavailable.error.js';
import { isRedlockError } from '../errors/redlock.error.js';
import { heldBy, lockContext, type LockFrame } from './async-context.js';
import { callShape, joinRefusal, type CallShape } from './call-shape.js';
import { adviseRetryAfter, type RetryAfter } from './retry-after.js';

/** What `runLocked` resolves with when `skip` is set and the lock was not acquired. */
export const SKIPPED: unique symbol = Symbol('nestjs-redlock:skipped');

/** Who runs a locked call, and what to do when its lock is not to be had. */
export interface LockedCall {
  /** Named in errors: `@Locked Class.method` or `LockService.run`. */
  readonly caller: string;
  /** Resolve `SKIPPED` instead of rejecting when the lock is not acquired. */
  readonly skip?: boolean;
  /** Recorded on the conflict that rejects the call (for the HTTP answer). */
  readonly retryAfter?: RetryAfter;
  /**
   * With `skip`, when the nodes could not decide (`unreachable`,
   * `expired`): reject (default), or warn through `logger` and skip.
   */
  readonly onUnavailable?: 'throw' | 'warn';
  readonly logger?: { warn(message: string): void };
}

/**
 * Runs `fn` holding every resource, reentrant by async context: resources
 * an enclosing call of the same chain holds are joined (counted; that call
 * releases them, after its joined calls finished), the others acquired and
 * held by the core's watchdog (`using()`). A call joins only a lock of its
 * own shape, or a write lock when it reads (see `joinRefusal`); otherwise
 * it is refused before anything is acquired. Once the instance is
 * shutting down, a call that would acquire is refused with
 * `LockServiceUnavailableError` (one that only joins still runs: its
 * enclosing call is finishing). With `skip`, a lock that cannot be
 * acquired resolves `SKIPPED` without running `fn`; an error from `fn`
 * itself always propagates unchanged.
 */
export async function runLocked<T>(
  redlock: LockManager,
  resources: string | string[],
  fn: (lock: Lock) => T | Promise<T>,
  options: RunOptions | undefined,
  call: LockedCall,
): Promise<T | typeof SKIPPED> {
  const { caller, skip = false, retryAfter } = call;
  const names = normalizeResources(resources);
  const held = heldBy(redlock, names);
  const shape = callShape(options);
  if (held.size > 0) refuseMixedShapes(held, shape, options, caller);
  const joined = [...new Set(held.values())];
  const ignoreLoss = options?.onLockLost === 'ignore';
  const lostBefore = joined.find((f) => f.lock.signal.aborted);
  const rest = names.filter((r) => !held.has(r));
  // The options are checked once per call: by the acquire of `using()`
  // below, or here when the call does not get there.
  if (rest.length === 0 || redlock.isClosed || (lostBefore && !ignoreLoss))
    checkRunOptions(options);
  if (lostBefore && !ignoreLoss) throw lostBefore.lock.signal.reason;
  if (rest.length > 0 && redlock.isClosed) {
    if (skip) return SKIPPED;
    throw new LockServiceUnavailableError(caller, 'shutdown');
  }
  // Joined from now, before the acquire below may wait: an enclosing call
  // that returns meanwhile must keep its lock for us, not release it and
  // let us run on a resource someone else may then hold.
  for (const f of joined) f.joined++;
  // Whether `fn` ran: an error before it is the acquire's.
  let acquired = rest.length === 0;
  let outcome: PromiseSettledResult<T>;
  try {
    const value =
      rest.length > 0
        ? await redlock.using(
            rest,
            (l) => {
              acquired = true;
              return runInFrame(redlock, l, rest, shape, fn);
            },
            options,
          )
        : await runInFrame(redlock, innermost(joined).lock, [], shape, fn);
    outcome = { status: 'fulfilled', value };
  } catch (error) {
    if (!acquired) {
      if (skip && skips(error, call)) return SKIPPED;
      adviseRetryAfter(error, retryAfter);
      throw error;
    }
    outcome = { status: 'rejected', reason: error };
  } finally {
    for (const f of joined) if (--f.joined === 0) f.drained?.();
  }
  const lostJoined = joined.find((f) => f.lock.signal.aborted);
  if (lostJoined && !ignoreLoss && !isLockLost(outcome))
    throw (lostJoined.lock.signal.reason as LockLostError).withOutcome(outcome);
  if (outcome.status === 'rejected') throw outcome.reason;
  return outcome.value;
}

/**
 * Throws when a resource an enclosing call holds is asked for with a shape
 * that cannot join it: after the options are checked, so a bad option is
 * reported as such.
 */
function refuseMixedShapes(
  held: ReadonlyMap<string, LockFrame>,
  shape: CallShape,
  options: RunOptions | undefined,
  caller: string,
): void {
  for (const [resource, frame] of held) {
    const refusal = joinRefusal(resource, frame.shape, shape, caller);
    if (refusal === undefined) continue;
    checkRunOptions(options);
    throw refusal;
  }
}

/**
 * Whether a `skip` call skips on `error`: when someone else holds the
 * resources, or the instance closed meanwhile; on an outage only with
 * `onUnavailable: 'warn'`, after saying so.
 */
function skips(error: unknown, call: LockedCall): boolean {
  if (!isRedlockError(error, 'LockNotAcquiredError')) return false;
  const { reason } = error as LockNotAcquiredError;
  if (reason === 'busy' || reason === 'closed') return true;
  if (call.onUnavailable !== 'warn') return false;
  call.logger?.warn(`${call.caller} was skipped: ${(error as Error).message}`);
  return true;
}

/** Runs `fn` in a new frame; once it settled, waits for joined calls, then closes the frame. */
function runInFrame<T>(
  owner: object,
  lock: Lock,
  resources: string[],
  shape: CallShape,
  fn: (lock: Lock) => T | Promise<T>,
): Promise<T> {
  const frame: LockFrame = {
    owner,
    lock,
    resources: new Set(resources),
    shape,
    parent: lockContext.getStore(),
    joined: 0,
    closed: false,
  };
  return lockContext.run(frame, async () => {
    try {
      return await fn(lock);
    } finally {
      // Un-awaited nested calls still rely on this lock: release after them.
      if (frame.joined > 0)
        await new Promise<void>((resolve) => (frame.drained = resolve));
      frame.closed = true;
    }
  });
}

/** The frame nearest to the current call (frames found later are outer). */
function innermost(frames: LockFrame[]): LockFrame {
  for (let f = lockContext.getStore(); f; f = f.parent)
    if (frames.includes(f)) return f;
  return frames[0];
}

function isLockLost(outcome: PromiseSettledResult<unknown>): boolean {
  return (
    outcome.status === 'rejected' &&
    (outcome.reason as Error | undefined)?.name === 'LockLostError'
  );
}
