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
   * Waits until woken for one of `resources`, `ms` pass, `signal` aborts,
   * or one of `stops` is called (`quit()` ends every wait at once).
   */
  wait(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    stops: Set<() => void>,
  ): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        stops.delete(done);
        for (const resource of resources) {
          const set = this.waiting.get(resource);
          set?.delete(done);
          if (set?.size === 0) this.waiting.delete(resource);
        }
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      stops.add(done);
      for (const resource of resources) {
        let set = this.waiting.get(resource);
        if (!set) this.waiting.set(resource, (set = new Set()));
        set.add(done);
      }
    });
  }
}
