import type { LockLostError } from '../../errors/lock-lost.error.js';
import type { WatchdogOptions } from '../config/options.js';
import type { Lock } from '../lock.js';

/** Extends many locks at once: one request per node for all of them. */
export interface BatchExtender {
  now(): number;
  /**
   * Extends each lock by its own lease. Marks those that failed lost (their
   * signal aborts) and resolves when every lock is settled.
   */
  extendMany(locks: readonly Lock[]): Promise<void>;
}

interface Watched {
  readonly lock: Lock;
  readonly options: WatchdogOptions;
  readonly holdUntil?: number;
  busy: boolean;
  /** Stops watching it (what `watch` returns). */
  stop: () => void;
}

/**
 * The watchdog for every lock `using()` holds in one process, on one timer.
 * Each lock is due for extension a third into its current lease (read from
 * the lock, so an extension by hand counts too), and may go early, from a
 * sixth on: a tick extends every lock already past its sixth in the same
 * request per node, so 10,000 locks held at once cost a few pipelines per
 * lease, not 10,000 timers each sending its own command. Failure, validity
 * run out, or `maxHold` reached: the lock's signal aborts and `onLost` is
 * called once.
 */
export class KeepAlive {
  private readonly watched = new Set<Watched>();
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  /** Ticks that sent extensions (tests read it). */
  ticks = 0;

  constructor(private readonly extender: BatchExtender) {}

  /** @internal Locks watched now. */
  get size(): number {
    return this.watched.size;
  }

  /**
   * Starts keeping `lock` alive; the returned function stops it. A lock
   * released without stopping is dropped at the next tick; a released lock
   * is not watched, and a lost one gets `onLost` at once.
   */
  watch(lock: Lock, options: WatchdogOptions = {}): () => void {
    const unwatched = () => undefined;
    if (lock.isReleased) return unwatched;
    if (lock.isLost) {
      // Its signal aborted already: no abort event will tell us.
      options.onLost?.(lock.signal.reason as LockLostError);
      return unwatched;
    }
    const lost = () => {
      if (!this.watched.delete(entry)) return;
      options.onLost?.(lock.signal.reason as LockLostError);
    };
    const entry: Watched = {
      lock,
      options,
      holdUntil:
        options.maxHold !== undefined
          ? this.extender.now() + options.maxHold
          : undefined,
      busy: false,
      stop: () => {
        this.watched.delete(entry);
        lock.signal.removeEventListener('abort', lost);
        if (this.watched.size === 0) this.disarm();
      },
    };
    this.watched.add(entry);
    lock.signal.addEventListener('abort', lost, { once: true });
    this.arm(this.dueAt(entry));
    return entry.stop;
  }

  /**
   * `lock` was extended by hand (perhaps with a shorter lease): the next
   * tick comes early enough for its new lease.
   */
  rescheduled(lock: Lock): void {
    if (this.watched.size > 0) this.arm(extensionDue(lock));
  }

  /**
   * Stops watching everything (on quit: the connections close, so nothing
   * can be extended any more). A lock still held ends with its validity:
   * then its signal aborts and `onLost` is called, as for any other loss.
   */
  stop(): void {
    const now = this.extender.now();
    for (const entry of [...this.watched]) {
      entry.stop();
      const { lock, options } = entry;
      const expiry = setTimeout(
        () => {
          if (lock.isReleased || lock.isLost) return;
          options.onLost?.(
            lock.markLost(
              'its validity ran out after quit(): nothing extended it any more',
            ),
          );
        },
        Math.max(0, lock.deadline - now),
      );
      expiry.unref();
    }
    this.disarm();
  }

  private dueAt(entry: Watched): number {
    const due = extensionDue(entry.lock);
    return entry.holdUntil === undefined ? due : Math.min(due, entry.holdUntil);
  }

  private arm(at: number): void {
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => void this.tick(),
      Math.max(0, at - this.extender.now()),
    );
    this.timer.unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.extender.now();
    const batch: Watched[] = [];
    for (const entry of this.watched) {
      if (entry.busy) continue;
      // Released without calling stop (a lock watched by hand): done with
      // it, and it was not lost (maxHold must not mark it so).
      if (entry.lock.isReleased) {
        entry.stop();
        continue;
      }
      if (entry.holdUntil !== undefined && now >= entry.holdUntil) {
        entry.lock.markLost(
          `maxHold (${entry.options.maxHold} ms) was reached`,
        );
        continue;
      }
      if (now >= leaseStart(entry.lock) + entry.lock.ttl / 6) batch.push(entry);
    }
    if (batch.length) {
      this.ticks++;
      for (const entry of batch) entry.busy = true;
      // The others keep their timer while this batch waits for its nodes
      // (up to half the shortest validity in it when a node hangs).
      this.rearm();
      await this.extender.extendMany(batch.map((e) => e.lock));
      for (const entry of batch) entry.busy = false;
    }
    this.rearm();
  }

  private rearm(): void {
    let next = Infinity;
    for (const entry of this.watched)
      if (!entry.busy) next = Math.min(next, this.dueAt(entry));
    if (next < Infinity) this.arm(next);
  }
}

/**
 * When `lock`'s current lease began, on the clock of its deadline: the
 * deadline counts from the request's send time, less the clock drift, so
 * this is at or before the send time.
 */
function leaseStart(lock: Lock): number {
  return lock.deadline - lock.ttl;
}

/** When `lock` is due for extension: a third into its current lease. */
function extensionDue(lock: Lock): number {
  return leaseStart(lock) + lock.ttl / 3;
}
