import { untilWoken } from '../util/wake.js';

/**
 * The read/write waiters of this process, by resource: a read/write lock
 * released here wakes every waiter of its resources (the readers waiting
 * for a writer may all go; a writer finds out whether readers are left).
 * Waiters of other processes find out at their next attempt.
 */
export class RwWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Resources with attempts out: how many, and the releases here since the first. */
  private readonly out = new Map<
    string,
    { attempts: number; releases: number }
  >();

  /** Wakes the waiters of `resources`, and tells the attempts out on them (see {@link attempted}). */
  wake(resources: readonly string[]): void {
    for (const resource of resources) {
      const entry = this.out.get(resource);
      if (entry) entry.releases++;
      const set = this.waiting.get(resource);
      if (!set) continue;
      this.waiting.delete(resource);
      for (const wake of set) wake();
    }
  }

  /** An attempt on `resources` goes out: what {@link attempted} compares with. */
  attempting(resources: readonly string[]): number[] {
    return resources.map((resource) => {
      let entry = this.out.get(resource);
      if (!entry)
        this.out.set(resource, (entry = { attempts: 0, releases: 0 }));
      entry.attempts++;
      return entry.releases;
    });
  }

  /**
   * The attempt started with {@link attempting} is back: whether a lock of
   * one of its resources was released here meanwhile. A refused attempt
   * then asks again at once: it was not waiting yet, so the release's
   * wake-up missed it.
   */
  attempted(resources: readonly string[], seen: readonly number[]): boolean {
    let released = false;
    resources.forEach((resource, j) => {
      const entry = this.out.get(resource);
      if (!entry) return;
      if (entry.releases > seen[j]) released = true;
      if (--entry.attempts === 0) this.out.delete(resource);
    });
    return released;
  }

  /**
   * Waits until woken for one of `resources`, `ms` pass, or one of `stops`
   * is called (`quit()` ends every wait at once); rejects with the reason
   * of `signal` when it aborts. `listen`: another source of wake-ups
   * (releases elsewhere), which returns its stop.
   */
  wait(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    stops: Set<() => void>,
    listen?: (wake: () => void) => () => void,
  ): Promise<void> {
    return untilWoken((wake) => {
      const timer = setTimeout(wake, Math.max(0, ms));
      const unlisten = listen?.(wake);
      stops.add(wake);
      for (const resource of resources) {
        let set = this.waiting.get(resource);
        if (!set) this.waiting.set(resource, (set = new Set()));
        set.add(wake);
      }
      return () => {
        clearTimeout(timer);
        unlisten?.();
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
