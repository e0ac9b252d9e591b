import type { Clock } from '../util/clock.js';
import { untilWoken } from '../util/wake.js';
import type { Lock } from '../lock.js';

/** One resource's permits as this process knows them. */
interface PermitSlots {
  readonly permits: number;
  /** Acquires of this process using the entry now. */
  users: number;
  /** The lock holding each slot in this process (one lock may hold slots of several resources). */
  readonly held: Map<number, Lock>;
  /** Slots tried and found held elsewhere: when their holder's lease ends (clock ms). */
  readonly busyUntil: Map<number, number>;
  /** Waiters of this process, woken one per slot freed here (oldest first). */
  readonly waiters: Set<() => void>;
}

/**
 * What this process knows of the permit slots of the semaphores it uses:
 * the slots it holds (skipped by its own acquires: no Redis call to learn
 * they are busy), the slots found busy elsewhere, and its waiters. Only a
 * hint for speed, never needed for the bound: every slot is still locked
 * on the nodes. Entries go once nobody of this process uses them.
 */
export class PermitBook {
  private readonly slots = new Map<string, PermitSlots>();

  constructor(private readonly clock: Clock) {}

  /** An acquire starts using `resource` as a semaphore of `permits` (its shape checked). */
  use(resource: string, permits: number): void {
    let entry = this.slots.get(resource);
    // An entry of another count is stale: its locks expired unreleased.
    if (!entry || entry.permits !== permits) {
      entry = {
        permits,
        users: 0,
        held: new Map(),
        busyUntil: new Map(),
        waiters: new Set(),
      };
      this.slots.set(resource, entry);
    }
    entry.users++;
  }

  /** The acquire that called {@link use} is done (it got its permit or gave up). */
  done(resource: string): void {
    const entry = this.slots.get(resource);
    if (!entry) return;
    entry.users--;
    this.forgetIfUnused(resource, entry);
  }

  /**
   * The slots of `resource` to try, starting at a random one so that
   * callers spread over the slots: those this process does not hold, the
   * ones not known to be held elsewhere first (an attempt for one resource
   * sends them all, and each node takes the first free one).
   */
  candidates(resource: string): number[] {
    const entry = this.slots.get(resource);
    if (!entry) return [];
    const now = this.clock.now();
    const start = Math.floor(Math.random() * entry.permits);
    const fresh: number[] = [];
    const busy: number[] = [];
    for (let k = 0; k < entry.permits; k++) {
      const slot = (start + k) % entry.permits;
      if (entry.held.get(slot)?.isHeld) continue;
      if ((entry.busyUntil.get(slot) ?? -Infinity) > now) busy.push(slot);
      else fresh.push(slot);
    }
    return fresh.concat(busy);
  }

  /** When the first slot of `resource` known to be held elsewhere frees at the latest (clock ms). */
  nextFree(resource: string): number | undefined {
    const entry = this.slots.get(resource);
    if (!entry) return undefined;
    let first: number | undefined;
    for (const until of entry.busyUntil.values())
      if (first === undefined || until < first) first = until;
    return first;
  }

  /** A slot tried and found held elsewhere for `holderTtl` more ms. */
  busy(resource: string, slot: number, holderTtl: number): void {
    this.slots.get(resource)?.busyUntil.set(slot, this.clock.now() + holderTtl);
  }

  /** Forgets what is known of slots held elsewhere: a poll tries them all again. */
  forgetBusy(resource: string): void {
    this.slots.get(resource)?.busyUntil.clear();
  }

  /** `lock` holds `slots[j]` of `resources[j]`; its release frees them here. */
  hold(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
  ): void {
    resources.forEach((resource, j) => {
      const entry = this.slots.get(resource);
      if (!entry) return;
      entry.held.set(slots[j], lock);
      entry.busyUntil.delete(slots[j]);
    });
    lock.afterRelease = () => this.freed(resources, slots, lock);
  }

  /**
   * Waits until a slot of one of `resources` is freed in this process, or
   * `ms` pass, or one of `stops` is called (`quit()` ends every wait at
   * once); rejects with the reason of `signal` when it aborts. Resolves
   * `true` when woken by a release.
   */
  waitForRelease(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    stops: Set<() => void>,
  ): Promise<boolean> {
    let released = false;
    return untilWoken((wake) => {
      const entries = resources
        .map((r) => this.slots.get(r))
        .filter((e) => e !== undefined);
      const byRelease = () => {
        released = true;
        wake();
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      stops.add(wake);
      for (const entry of entries) entry.waiters.add(byRelease);
      return () => {
        clearTimeout(timer);
        stops.delete(wake);
        for (const entry of entries) entry.waiters.delete(byRelease);
      };
    }, signal).then(() => released);
  }

  /** Drops what is known of `resource` once no acquire of this process uses it and it holds no slot. */
  private forgetIfUnused(resource: string, entry: PermitSlots): void {
    if (entry.users > 0) return;
    for (const [slot, lock] of entry.held) {
      if (lock.isHeld) return;
      entry.held.delete(slot);
    }
    this.slots.delete(resource);
  }

  private freed(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
  ): void {
    resources.forEach((resource, j) => {
      const entry = this.slots.get(resource);
      if (!entry) return;
      if (entry.held.get(slots[j]) === lock) entry.held.delete(slots[j]);
      // One slot freed: one waiter may take it (the oldest).
      const first = entry.waiters.values().next();
      if (!first.done) first.value();
      this.forgetIfUnused(resource, entry);
    });
  }
}
