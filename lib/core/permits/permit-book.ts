import type { Clock } from '../util/clock.js';
import { untilWoken } from '../util/wake.js';
import type { Lock } from '../lock.js';
import {
  candidateSlots,
  mayPass,
  newPermitSlots,
  type Holding,
  type Lingering,
  type PermitSlots,
  type PermitWaiter,
} from './permit-slots-state.js';

/**
 * What this process knows of the permit slots of the semaphores it uses:
 * the slots it holds (skipped by its own acquires: no Redis call to learn
 * they are busy), the slots found busy elsewhere, and its waiters. Only a
 * hint for speed, never needed for the bound: every slot is still locked
 * on the nodes. Entries go once nobody of this process uses them.
 */
export class PermitBook {
  private readonly slots = new Map<string, PermitSlots>();
  private readonly holdings = new WeakMap<Lock, Holding>();

  constructor(private readonly clock: Clock) {}

  /** An acquire starts using `resource` as a semaphore of `permits` (its shape checked). */
  use(resource: string, permits: number): void {
    let entry = this.slots.get(resource);
    // An entry of another count is stale: its locks expired unreleased.
    if (!entry || entry.permits !== permits) {
      entry = newPermitSlots(permits);
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

  /** The slots of `resource` to try, in order (see `candidateSlots`). */
  candidates(resource: string): number[] {
    const entry = this.slots.get(resource);
    return entry ? candidateSlots(entry, this.clock.now()) : [];
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

  /**
   * `lock` holds `slots[j]` of `resources[j]`; its release frees them here.
   * `from`: the lock whose lease it took as it stood ({@link passOn}).
   */
  hold(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
    from?: Lock,
    contended = from !== undefined,
  ): void {
    resources.forEach((resource, j) => {
      const entry = this.slots.get(resource);
      if (!entry) return;
      entry.held.set(slots[j], lock);
      entry.busyUntil.delete(slots[j]);
    });
    const before = from && this.holdings.get(from);
    this.holdings.set(lock, {
      resources,
      slots,
      streak: before ? before.streak + 1 : 0,
      since: before?.streak ? before.since : this.clock.now(),
      contended,
    });
    lock.afterRelease = () => this.freed(resources, slots, lock);
  }

  /**
   * Passes the permit of `lock`, being released, to the oldest waiter of
   * this process that can take it as it stands (same value, keys and
   * validity deadline: no round trip, and the slot never frees on the
   * nodes). As the mutex's in-process handoff: only a single-resource lock
   * without fencing tokens (a fenced grant needs the quorum), not lost,
   * with half its lease left, and for `limit` passes in a row within
   * `LOCAL_HANDOFF_WINDOW_MS` of the first; then the permit goes back to
   * the nodes, where other processes may take it. True when one took it.
   */
  passOn(lock: Lock, limit: number): boolean {
    const entry = this.passable(lock, limit);
    if (!entry) return false;
    const holding = this.holdings.get(lock)!;
    for (const waiter of entry.waiters) {
      const next = waiter.take?.(lock);
      if (!next) continue;
      this.hold(holding.resources, holding.slots, next, lock);
      return true;
    }
    return false;
  }

  /**
   * Keeps the permit of `lock`, being released while no caller of this
   * process waits for it, until the event loop turns, for a caller of this
   * process that asks for the resource meanwhile ({@link adopt}; typically
   * the one that released it, asking again), as the mutex's lingering
   * release does. Only for a lock whose acquire was refused first (others
   * compete for it), within the same bounds and streak as {@link passOn}.
   * If nobody asks, `releaseLater` sends the release at the end of the
   * turn, or `quit()` does (it calls `stops`). True when it kept the lease.
   */
  linger(
    lock: Lock,
    limit: number,
    stops: Set<() => void>,
    releaseLater: () => Promise<unknown>,
  ): boolean {
    const entry = this.passable(lock, limit);
    const holding = this.holdings.get(lock);
    if (!entry || !holding?.contended || entry.waiters.size > 0) return false;
    const cancel = () => {
      entry.lingering.delete(lock);
      clearImmediate(lingering.immediate);
      stops.delete(expire);
    };
    const expire = () => {
      if (!entry.lingering.has(lock)) return;
      cancel();
      void releaseLater().then(() =>
        this.freed(holding.resources, holding.slots, lock),
      );
    };
    const lingering: Lingering = {
      immediate: setImmediate(expire),
      expire,
      cancel,
    };
    entry.lingering.set(lock, lingering);
    stops.add(expire);
    return true;
  }

  /**
   * A lease of `resource` kept by {@link linger}, passed to a caller that
   * asks for it (`take`, as a waiter's), if one is kept and it fits; one
   * with too little left goes to the nodes now.
   */
  adopt(
    resource: string,
    limit: number,
    take: (lock: Lock) => Lock | undefined,
  ): Lock | undefined {
    const entry = this.slots.get(resource);
    if (!entry) return undefined;
    for (const [lock, lingering] of entry.lingering) {
      // Checked again: synchronous work may have run since the release.
      if (this.passable(lock, limit) !== entry) {
        lingering.expire();
        continue;
      }
      const next = take(lock);
      if (!next) continue;
      lingering.cancel();
      const holding = this.holdings.get(lock)!;
      this.hold(holding.resources, holding.slots, next, lock);
      return next;
    }
    return undefined;
  }

  /** The entry of `lock`'s resource when its permit may pass on (see `mayPass`). */
  private passable(lock: Lock, limit: number): PermitSlots | undefined {
    const holding = this.holdings.get(lock);
    if (!holding) return undefined;
    const entry = this.slots.get(holding.resources[0]);
    return mayPass(entry, holding, lock, limit, this.clock.now())
      ? entry
      : undefined;
  }

  /** How many slots of each of `resources` freed here so far (see {@link claimFree}). */
  freesOf(resources: readonly string[]): number[] {
    return resources.map((r) => this.slots.get(r)?.frees ?? 0);
  }

  /**
   * Whether a slot of `resources` freed here while an attempt that began
   * at `seen` (from {@link freesOf}) was out, and no other failed attempt
   * took that free as its wake-up yet: then this one takes it and asks the
   * nodes again at once (one attempt per free, as one parked waiter is
   * woken per free), instead of waiting for a wake-up that came already.
   */
  claimFree(resources: readonly string[], seen: readonly number[]): boolean {
    return resources.some((r, j) => {
      const entry = this.slots.get(r);
      if (!entry) return false;
      const from = Math.max(seen[j], entry.claimed);
      if (entry.frees <= from) return false;
      entry.claimed = from + 1;
      return true;
    });
  }

  /**
   * Waits until a slot of one of `resources` is freed in this process, or
   * `ms` pass, or one of `stops` is called (`quit()` ends every wait at
   * once); rejects with the reason of `signal` when it aborts. Resolves
   * `true` when woken by a release. `take`: see {@link PermitWaiter} (a
   * waiter handed a lease is woken as by a release).
   */
  waitForRelease(
    resources: readonly string[],
    ms: number,
    signal: AbortSignal | undefined,
    stops: Set<() => void>,
    take?: (lock: Lock) => Lock | undefined,
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
      const waiter: PermitWaiter = {
        wake: byRelease,
        take:
          take &&
          ((lock) => {
            const next = take(lock);
            if (next) byRelease();
            return next;
          }),
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      stops.add(wake);
      for (const entry of entries) entry.waiters.add(waiter);
      return () => {
        clearTimeout(timer);
        stops.delete(wake);
        for (const entry of entries) entry.waiters.delete(waiter);
      };
    }, signal).then(() => released);
  }

  /** Drops what is known of `resource` once no acquire of this process uses it and it holds no slot. */
  private forgetIfUnused(resource: string, entry: PermitSlots): void {
    if (entry.users > 0 || entry.lingering.size > 0) return;
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
      // Otherwise its lease passed on (passOn), or is kept for a caller
      // that may ask (linger): nothing freed yet.
      if (entry.held.get(slots[j]) === lock && !entry.lingering.has(lock)) {
        entry.held.delete(slots[j]);
        // One slot freed: one waiter may take it (the oldest), or an
        // attempt out meanwhile (claimFree).
        const first = entry.waiters.values().next();
        if (!first.done) first.value.wake();
        else entry.frees++;
      }
      this.forgetIfUnused(resource, entry);
    });
  }
}
