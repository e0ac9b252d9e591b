import type { LockLostError } from '../../errors/lock-lost.error.js';
import { checkRunOptions } from '../config/call-options.js';
import { REDLOCK_DEFAULTS } from '../config/defaults.js';
import type { RunOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';

/** See `Redlock.hold`: `fn` runs under `lock`, kept alive by the watchdog, then the lock is released. */
export async function hold<T>(
  ctx: RedlockContext,
  lock: Lock,
  fn: (lock: Lock) => T | Promise<T>,
  options?: RunOptions,
): Promise<T> {
  checkRunOptions(options);
  const stopWatchdog = ctx.keepAlive.watch(lock, {
    maxHold: options?.maxHold,
    onLost: (error) => ctx.logger.warn(error.message),
  });
  let outcome: PromiseSettledResult<T>;
  try {
    outcome = { status: 'fulfilled', value: await fn(lock) };
  } catch (error) {
    outcome = { status: 'rejected', reason: error };
  }
  stopWatchdog();
  await lock.release();
  if (
    lock.signal.aborted &&
    (options?.onLockLost ?? REDLOCK_DEFAULTS.onLockLost) === 'throw'
  ) {
    throw (lock.signal.reason as LockLostError).withOutcome(outcome);
  }
  if (outcome.status === 'rejected') throw outcome.reason;
  return outcome.value;
}
