import { untilWoken } from '../util/wake.js';

/**
 * The read/write waiters of this process, by resource: a read/write lock
 * released here wakes every waiter of its resources (the readers waiting
 * for a writer may all go; a writer finds out whether readers are left).
 * Waiters of other processes find out at their next attempt.
 */
export class RwWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Wakes the waiters of `resources`. */
  wake(resources: readonly string[]): void {
    for (const resource of resources) {
      const set = this.waiting.get(resource);
      if (!set) continue;
      this.waiting.delete(resource);
      for (const wake of set) wake();
    }
  }

  /**
   * Waits until woken for one of `resources`, `ms` pass, or one of `stops`
   * is called (`quit()` ends every wait at once); rejects with the reason
   * of `signal` when it aborts.
   */
  wait(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    stops: Set<() => void>,
  ): Promise<void> {
    return untilWoken((wake) => {
      const timer = setTimeout(wake, Math.max(0, ms));
      stops.add(wake);
      for (const resource of resources) {
        let set = this.waiting.get(resource);
        if (!set) this.waiting.set(resource, (set = new Set()));
        set.add(wake);
      }
      return () => {
        clearTimeout(timer);
        stops.delete(wake);
        for (const resource of resources) {
          const set = this.waiting.get(resource);
          set?.delete(wake);
          if (set?.size === 0) this.waiting.delete(resource);
        }
      };
    }, signal);
  }
}
