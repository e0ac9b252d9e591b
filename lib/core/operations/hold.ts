import type { LockLostError } from '../../errors/lock-lost.error.js';
import { checkRunOptions } from '../config/call-options.js';
import { REDLOCK_DEFAULTS } from '../config/defaults.js';
import type { RunOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';

/**
 * What `hold` needs of an instance: a watchdog, a logger, and the set of
 * runs `quit()` waits for (the in-memory lock of `nestjs-redlock/testing`
 * brings its own).
 */
export type HoldContext = {
  readonly keepAlive: Pick<RedlockContext['keepAlive'], 'watch'>;
} & Pick<RedlockContext, 'logger' | 'runs' | 'clock'>;

/**
 * See `Redlock.hold`: `fn` runs under `lock`, kept alive by the watchdog,
 * then the lock is released. `checked`: the options were checked already,
 * by the acquire of `using()` (each call checks its options once).
 */
export async function hold<T>(
  ctx: HoldContext,
  lock: Lock,
  fn: (lock: Lock) => T | Promise<T>,
  options?: RunOptions,
  checked = false,
): Promise<T> {
  if (!checked) checkRunOptions(options);
  // quit() gives the run `shutdownTimeout` to finish, its release included.
  const running = run(ctx, lock, fn, options?.maxHold, options?.minHold);
  ctx.runs.add(running);
  let outcome: PromiseSettledResult<T>;
  try {
    outcome = await running;
  } finally {
    ctx.runs.delete(running);
  }
  if (
    lock.signal.aborted &&
    (options?.onLockLost ?? REDLOCK_DEFAULTS.onLockLost) === 'throw'
  ) {
    throw (lock.signal.reason as LockLostError).withOutcome(outcome);
  }
  if (outcome.status === 'rejected') throw outcome.reason;
  return outcome.value;
}

/**
 * `fn(lock)` with the watchdog on, then the release: `fn`'s outcome,
 * whether it returns, resolves, throws or rejects. Before `minHold` has
 * passed since the start, the keys are left to expire at `minHold`
 * instead of being deleted (see `leaveLock`).
 */
async function run<T>(
  ctx: HoldContext,
  lock: Lock,
  fn: (lock: Lock) => T | Promise<T>,
  maxHold: number | undefined,
  minHold: number | undefined,
): Promise<PromiseSettledResult<T>> {
  const started = ctx.clock.now();
  const stopWatchdog = ctx.keepAlive.watch(lock, {
    maxHold,
    onLost: (error) => ctx.logger.warn(error.message),
  });
  let outcome: PromiseSettledResult<T>;
  try {
    outcome = { status: 'fulfilled', value: await fn(lock) };
  } catch (error) {
    outcome = { status: 'rejected', reason: error };
  }
  stopWatchdog();
  const rest = (minHold ?? 0) - (ctx.clock.now() - started);
  if (rest > 0 && !lock.isLost && !lock.isReleased) await lock.letExpire(rest);
  else await lock.release();
  return outcome;
}
