import type { LockLostError } from '../errors/lock-lost.error.js';
import type { WatchdogOptions } from '../core/config/options.js';
import type { Lock } from '../core/lock.js';
import { untilWoken } from '../core/util/wake.js';
import type { Clock } from '../core/util/clock.js';
import type { MemoryStore } from './memory-store.js';
import type { Schedule } from './test-clock.js';

/** Waits for a release (any) in `store`, `ms` on the clock, or the signal. */
export function waitForRelease(
  store: MemoryStore,
  schedule: Schedule,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return untilWoken((wake) => {
    const cancel = schedule(ms, wake);
    store.waiters.add(wake);
    return () => {
      cancel();
      store.waiters.delete(wake);
    };
  }, signal);
}

/**
 * The watchdog of the in-memory lock: extends `lock` every third of its
 * lease, on `clock`, until stopped (what it returns), lost or released;
 * `maxHold` makes the lock lost. On loss, `onLost` is called once.
 */
export function keepAlive(
  lock: Lock,
  options: WatchdogOptions = {},
  clock: Clock,
  schedule: Schedule,
): () => void {
  if (lock.isReleased) return () => undefined;
  const holdUntil =
    options.maxHold === undefined ? Infinity : clock.now() + options.maxHold;
  let cancel = () => {};
  const lost = () => {
    cancel();
    options.onLost?.(lock.signal.reason as LockLostError);
  };
  const tick = () => {
    if (lock.isReleased || lock.isLost) return;
    if (clock.now() >= holdUntil) {
      lock.markLost(`maxHold (${options.maxHold} ms) was reached`);
      return;
    }
    lock.extend().catch(() => undefined);
    arm();
  };
  const arm = () => {
    const due = Math.min(lock.ttl / 3, holdUntil - clock.now());
    cancel = schedule(Math.max(0, due), tick);
  };
  if (lock.isLost) {
    options.onLost?.(lock.signal.reason as LockLostError);
    return () => undefined;
  }
  lock.signal.addEventListener('abort', lost, { once: true });
  arm();
  return () => {
    cancel();
    lock.signal.removeEventListener('abort', lost);
  };
}
