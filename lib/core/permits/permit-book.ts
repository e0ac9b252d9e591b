import { LockShapeError } from '../../errors/lock-shape.error.js';
import type { Clock } from '../util/clock.js';
import type { Lock } from '../lock.js';
import { shapeName } from './permit-slots.js';

/** One resource used as a semaphore in this process. */
interface PermitsInUse {
  readonly permits: number;
  /** Acquires of it under way in this process. */
  acquiring: number;
  /** The lock holding each slot in this process (one lock may hold slots of several resources). */
  readonly held: Map<number, Lock>;
  /** Slots tried and found held elsewhere: when their holder's lease ends (clock ms). */
  readonly busyUntil: Map<number, number>;
  /** Waiters of this process, woken one per slot freed here (oldest first). */
  readonly waiters: Set<() => void>;
}

/**
 * What this process knows of the semaphores it uses: each resource's
 * `permits` (to refuse a call of another shape), the slots it holds
 * (skipped by its own acquires: no Redis call to learn they are busy),
 * the slots found busy elsewhere, and its waiters. Only a hint for
 * speed, never needed for the bound: every slot is still locked on the
 * nodes.
 */
export class PermitBook {
  private readonly inUse = new Map<string, PermitsInUse>();

  constructor(private readonly clock: Clock) {}

  /** Resources used as semaphores now (a mutex acquire checks only when not 0). */
  get size(): number {
    return this.inUse.size;
  }

  /** Refuses a mutex on a resource this process uses as a semaphore. */
  checkMutex(resources: readonly string[]): void {
    for (const resource of resources) {
      const entry = this.current(resource);
      if (entry)
        throw new LockShapeError(resource, 'mutex', shapeName(entry.permits));
    }
  }

  /** The shape `resource` is used with in this process, if a semaphore. */
  permitsOf(resource: string): number | undefined {
    return this.current(resource)?.permits;
  }

  /**
   * Starts an acquire of `permits` on each resource: refused, for all of
   * them, when one is in use with another count. Pair with {@link leave}.
   */
  enter(resources: readonly string[], permits: number): void {
    for (const resource of resources) {
      const entry = this.current(resource);
      if (entry && entry.permits !== permits)
        throw new LockShapeError(
          resource,
          shapeName(permits),
          shapeName(entry.permits),
        );
    }
    for (const resource of resources) {
      let entry = this.inUse.get(resource);
      if (!entry) {
        entry = {
          permits,
          acquiring: 0,
          held: new Map(),
          busyUntil: new Map(),
          waiters: new Set(),
        };
        this.inUse.set(resource, entry);
      }
      entry.acquiring++;
    }
  }

  /** Ends an acquire started with {@link enter}. */
  leave(resources: readonly string[]): void {
    for (const resource of resources) {
      const entry = this.inUse.get(resource);
      if (!entry) continue;
      entry.acquiring--;
      this.forgetIfUnused(resource, entry);
    }
  }

  /**
   * The slots of `resource` worth trying now, starting at a random one so
   * that callers spread over the slots: neither held in this process nor
   * known to be held elsewhere.
   */
  candidates(resource: string): number[] {
    const entry = this.inUse.get(resource);
    if (!entry) return [];
    const now = this.clock.now();
    const start = Math.floor(Math.random() * entry.permits);
    const slots: number[] = [];
    for (let k = 0; k < entry.permits; k++) {
      const slot = (start + k) % entry.permits;
      if (entry.held.get(slot)?.isHeld) continue;
      if ((entry.busyUntil.get(slot) ?? -Infinity) > now) continue;
      slots.push(slot);
    }
    return slots;
  }

  /** When the first slot of `resource` known to be held elsewhere frees at the latest (clock ms). */
  nextFree(resource: string): number | undefined {
    const entry = this.inUse.get(resource);
    if (!entry) return undefined;
    let first: number | undefined;
    for (const until of entry.busyUntil.values())
      if (first === undefined || until < first) first = until;
    return first;
  }

  /** A slot tried and found held elsewhere for `holderTtl` more ms. */
  busy(resource: string, slot: number, holderTtl: number): void {
    this.inUse.get(resource)?.busyUntil.set(slot, this.clock.now() + holderTtl);
  }

  /** Forgets what is known of slots held elsewhere: a poll tries them all again. */
  forgetBusy(resource: string): void {
    this.inUse.get(resource)?.busyUntil.clear();
  }

  /** `lock` holds `slots[j]` of `resources[j]`; its release frees them here. */
  hold(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
  ): void {
    resources.forEach((resource, j) => {
      const entry = this.inUse.get(resource);
      if (!entry) return;
      entry.held.set(slots[j], lock);
      entry.busyUntil.delete(slots[j]);
    });
    lock.afterRelease = () => this.freed(resources, slots, lock);
  }

  /**
   * Waits until a slot of one of `resources` is freed in this process, or
   * `ms` pass. Resolves `true` when woken by a release.
   */
  waitForRelease(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    return new Promise((resolve) => {
      const entries = resources
        .map((r) => this.inUse.get(r))
        .filter((e) => e !== undefined);
      const done = (woken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        for (const entry of entries) entry.waiters.delete(wake);
        resolve(woken);
      };
      const wake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(done, Math.max(0, ms), false);
      signal?.addEventListener('abort', onAbort, { once: true });
      for (const entry of entries) entry.waiters.add(wake);
    });
  }

  private freed(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
  ): void {
    resources.forEach((resource, j) => {
      const entry = this.inUse.get(resource);
      if (!entry) return;
      if (entry.held.get(slots[j]) === lock) entry.held.delete(slots[j]);
      // One slot freed: one waiter may take it (the oldest).
      const first = entry.waiters.values().next();
      if (!first.done) first.value();
      this.forgetIfUnused(resource, entry);
    });
  }

  /** The entry of `resource` if it is still in use (acquiring, or a slot held). */
  private current(resource: string): PermitsInUse | undefined {
    const entry = this.inUse.get(resource);
    if (!entry) return undefined;
    return this.forgetIfUnused(resource, entry) ? undefined : entry;
  }

  /** Drops an entry nobody acquires and whose slots are all free here; true if dropped. */
  private forgetIfUnused(resource: string, entry: PermitsInUse): boolean {
    if (entry.acquiring > 0 || entry.waiters.size > 0) return false;
    for (const [slot, lock] of entry.held) {
      if (lock.isHeld) return false;
      entry.held.delete(slot);
    }
    this.inUse.delete(resource);
    return true;
  }
}
