/** Something due at a time on the monotonic clock (`performance.now()`). */
export interface Deadline {
  /** When it is due (`performance.now()` ms). */
  at: number;
  /** Called once, at or after `at`, unless removed first. */
  fire(): void;
}

/**
 * One timer for many deadlines: every poll in flight has one (its node
 * timeout), and nearly all of them are removed long before they are due,
 * when the nodes answer. A Node timer per poll cost about 2 % of a
 * sequential lock+unlock pair on 5 local nodes (arming and clearing a libuv
 * timer twice per pair); here adding and removing a deadline is a `Set`
 * operation, and the one timer is re-armed only when it fires or when a
 * deadline earlier than the one it waits for arrives (a shorter node
 * timeout).
 *
 * The timer keeps the process alive only while deadlines are pending, as
 * the per-poll timers did: once none is left it is unreferenced, so an app
 * that is done exits at once instead of after the last node timeout.
 */
export class DeadlineTimer {
  private readonly pending = new Set<Deadline>();
  private timer?: NodeJS.Timeout;
  /** When the armed timer fires; `Infinity` when none is armed. */
  private armedFor = Infinity;

  add(deadline: Deadline): void {
    this.pending.add(deadline);
    if (deadline.at < this.armedFor) {
      clearTimeout(this.timer);
      this.arm(deadline.at, performance.now());
    } else if (this.pending.size === 1) {
      this.timer?.ref();
    }
  }

  delete(deadline: Deadline): void {
    if (this.pending.delete(deadline) && this.pending.size === 0)
      this.timer?.unref();
  }

  /** How many deadlines are pending (for tests). */
  get size(): number {
    return this.pending.size;
  }

  private arm(at: number, now: number): void {
    this.armedFor = at;
    // Timers may fire up to a millisecond early on Node's clock; `fire`
    // re-arms for what is not due yet.
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(at - now)));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    let next = Infinity;
    // A copy: a deadline that fire() adds again is not visited twice.
    for (const deadline of [...this.pending]) {
      if (deadline.at <= now) {
        this.pending.delete(deadline);
        deadline.fire();
      } else if (deadline.at < next) {
        next = deadline.at;
      }
    }
    // A deadline added by a fire() above armed the timer already.
    if (next < this.armedFor) {
      clearTimeout(this.timer);
      this.arm(next, now);
    }
  };
}

/** The timer every poll of this process shares. */
export const deadlines = new DeadlineTimer();
