/**
 * Something due at a time on the monotonic clock (`performance.now()`),
 * kept by a {@link DeadlineTimer}. The links are the timer's: a deadline is
 * in at most one timer's list at a time.
 */
export abstract class Deadline {
  /** When it is due (`performance.now()` ms). */
  at = 0;
  /** @internal The timer's list. */
  previousDeadline?: Deadline;
  /** @internal The timer's list. */
  nextDeadline?: Deadline;
  /** @internal Whether it is in a timer's list. */
  pendingDeadline = false;

  /**
   * Called once, at or after `at`, unless removed first. It runs while the
   * timer walks its list: it may add deadlines (itself again included), but
   * must not remove others (a poll's defers its work to `setImmediate`).
   */
  abstract fire(): void;
}

/**
 * One timer for many deadlines: every poll in flight has one (its node
 * timeout), and nearly all of them are removed long before they are due,
 * when the nodes answer. Adding and removing a deadline is linking and
 * unlinking it in a list, with no allocation and no call into libuv; the
 * one timer is re-armed only when it fires or when a deadline earlier than
 * the one it waits for arrives (docs/performance.md says what a timer per
 * poll cost).
 *
 * The timer keeps the process alive while deadlines are pending, and stays
 * armed (for the deadline it was set for) after the last one is removed,
 * rather than being unreferenced and referenced again for every poll. Once
 * it fires with nothing pending it is gone; `quit()` unreferences it at once
 * when nothing is pending (`unrefWhenIdle`), so an app that is done exits
 * without waiting for it.
 */
export class DeadlineTimer {
  private first?: Deadline;
  private last?: Deadline;
  private count = 0;
  private timer?: NodeJS.Timeout;
  /** When the armed timer fires; `Infinity` when none is armed. */
  private armedFor = Infinity;

  add(deadline: Deadline): void {
    if (deadline.pendingDeadline) this.delete(deadline);
    deadline.pendingDeadline = true;
    deadline.previousDeadline = this.last;
    deadline.nextDeadline = undefined;
    if (this.last) this.last.nextDeadline = deadline;
    else this.first = deadline;
    this.last = deadline;
    this.count++;
    if (deadline.at < this.armedFor) {
      clearTimeout(this.timer);
      this.arm(deadline.at, performance.now());
    } else if (this.count === 1) {
      this.timer?.ref();
    }
  }

  delete(deadline: Deadline): void {
    if (!deadline.pendingDeadline) return;
    const { previousDeadline: previous, nextDeadline: next } = deadline;
    if (previous) previous.nextDeadline = next;
    else this.first = next;
    if (next) next.previousDeadline = previous;
    else this.last = previous;
    deadline.previousDeadline = deadline.nextDeadline = undefined;
    deadline.pendingDeadline = false;
    this.count--;
  }

  /** Lets the process exit before the armed timer fires, if nothing is pending. */
  unrefWhenIdle(): void {
    if (this.count === 0) this.timer?.unref();
  }

  /** How many deadlines are pending (for tests). */
  get size(): number {
    return this.count;
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
    // Deadlines that fire() adds again go to the end of the list, after
    // `end`: they are not visited in this round.
    const end = this.last;
    let deadline = this.first;
    while (deadline) {
      const following = deadline === end ? undefined : deadline.nextDeadline;
      if (deadline.at <= now) {
        this.delete(deadline);
        deadline.fire();
      } else if (deadline.at < next) {
        next = deadline.at;
      }
      deadline = following;
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
