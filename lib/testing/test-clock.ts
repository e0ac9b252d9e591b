import type { Clock } from '../core/util/clock.js';

interface Timer {
  readonly at: number;
  readonly fire: () => void;
}

/** Resolves once pending I/O callbacks and the promise chains they start have run. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A clock that moves only when a test says so, for `RedlockTestingModule`:
 * leases, `waitTimeout`, the watchdog and `maxHold` of the in-memory lock
 * all run on it, so a test of a 30 s lease takes no time.
 *
 * ```ts
 * const clock = new TestClock();
 * // RedlockTestingModule.forRoot({ clock })
 * await clock.advance(30_000); // leases run out, waiters give up
 * ```
 *
 * @publicApi
 */
export class TestClock implements Clock {
  private time = 0;
  private readonly timers = new Set<Timer>();

  /** `epoch`: the wall-clock time (ms) that `now() === 0` stands for. */
  constructor(private readonly epoch = Date.now()) {}

  now(): number {
    return this.time;
  }

  toEpoch(monotonic: number): number {
    return this.epoch + monotonic;
  }

  /**
   * Moves the clock forward by `ms`, firing what falls due in time order,
   * and lets the work each firing starts run before the clock moves on.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0))
      throw new RangeError(`advance(ms) takes ms >= 0, got ${ms}`);
    const target = this.time + ms;
    await nextTurn();
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.timers)
        if (timer.at <= target && (!next || timer.at < next.at)) next = timer;
      if (!next) break;
      this.timers.delete(next);
      this.time = Math.max(this.time, next.at);
      next.fire();
      await nextTurn();
    }
    this.time = target;
    await nextTurn();
  }

  /** @internal Calls `fire` once the clock reaches `now() + delay`; returns the cancel. */
  schedule(delay: number, fire: () => void): () => void {
    const timer: Timer = { at: this.time + Math.max(0, delay), fire };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  }
}

/** Calls `fire` after `delay` ms on some clock; returns the cancel. */
export type Schedule = (delay: number, fire: () => void) => () => void;

/** Schedules on a `TestClock`, or on Node's timers for any other clock. */
export function scheduler(clock: Clock): Schedule {
  if (clock instanceof TestClock)
    return (delay, fire) => clock.schedule(delay, fire);
  return (delay, fire) => {
    const timer = setTimeout(fire, delay);
    return () => clearTimeout(timer);
  };
}
