import type { LockLostError } from '../errors/lock-lost.error.js';
import type { Lock } from './lock.js';

/**
 * Options of a {@link Watchdog}.
 *
 * @publicApi
 */
export interface WatchdogOptions {
  /** Longest time in ms the lock is kept alive; then it counts as lost. Default: no bound. */
  maxHold?: number;
  /** Called once if the lock is lost. */
  onLost?: (error: LockLostError) => void;
}

/**
 * Keeps a lock alive while its holder works (Redisson's answer to "how long
 * should the lease be"): every third of the lease it extends the lock, so a
 * live holder never loses it to expiry and a crashed one frees it within one
 * lease. When an extension fails, the validity ran out (the process was
 * paused past it), or `maxHold` is reached, the lock's signal aborts and the
 * watchdog stops.
 *
 * @publicApi
 */
export class Watchdog {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly holdUntil?: number;

  constructor(
    private readonly lock: Lock,
    private readonly now: () => number,
    private readonly options: WatchdogOptions = {},
  ) {
    if (options.maxHold !== undefined) this.holdUntil = now() + options.maxHold;
    lock.signal.addEventListener('abort', () => this.lost(), { once: true });
  }

  /** Starts extending. */
  start(): this {
    this.schedule();
    return this;
  }

  /** Stops extending (the lock itself is left as it is). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    let delay = this.lock.ttl / 3;
    if (this.holdUntil !== undefined)
      delay = Math.min(delay, Math.max(0, this.holdUntil - this.now()));
    this.timer = setTimeout(() => void this.tick(), delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    if (this.holdUntil !== undefined && this.now() >= this.holdUntil) {
      this.lock.markLost(`maxHold (${this.options.maxHold} ms) was reached`);
      return;
    }
    try {
      await this.lock.extend();
    } catch {
      // extend() marked the lock lost; the abort listener reports it.
      return;
    }
    this.schedule();
  }

  private lost(): void {
    const wasRunning = !this.stopped;
    this.stop();
    if (wasRunning)
      this.options.onLost?.(this.lock.signal.reason as LockLostError);
  }
}
