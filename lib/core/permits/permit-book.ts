import { LOCAL_HANDOFF_WINDOW_MS } from '../contention/line.js';
import type { Clock } from '../util/clock.js';
import { untilWoken } from '../util/wake.js';
import type { Lock } from '../lock.js';

/** A caller of this process waiting for a permit. */
interface PermitWaiter {
  /** Wakes it to ask the nodes again. */
  readonly wake: () => void;
  /**
   * Takes `lock`'s lease as it stands (see {@link PermitBook.passOn}): the
   * waiter's lock, or `undefined` when its call does not fit that lease.
   * Only single-resource waiters have it.
   */
  readonly take?: (lock: Lock) => Lock | undefined;
}

/** The slots a lock of this process holds, and how many times its lease passed on in a row. */
interface Holding {
  readonly resources: readonly string[];
  readonly slots: readonly number[];
  /** Passes of this lease within the process so far, and when the first was (clock ms). */
  readonly streak: number;
  readonly since: number;
}

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
  readonly waiters: Set<PermitWaiter>;
  /**
   * Slots freed here while no waiter was parked (its attempt was out), and
   * how many of those an attempt that failed meanwhile took as its wake-up.
   */
  frees: number;
  claimed: number;
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
  private readonly holdings = new WeakMap<Lock, Holding>();

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
        frees: 0,
        claimed: 0,
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

  /**
   * `lock` holds `slots[j]` of `resources[j]`; its release frees them here.
   * `from`: the lock whose lease it took as it stood ({@link passOn}).
   */
  hold(
    resources: readonly string[],
    slots: readonly number[],
    lock: Lock,
    from?: Lock,
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
    const holding = this.holdings.get(lock);
    if (!holding || holding.resources.length !== 1) return false;
    const now = this.clock.now();
    if (
      holding.streak >= limit ||
      (holding.streak > 0 && now - holding.since >= LOCAL_HANDOFF_WINDOW_MS) ||
      lock.isLost ||
      lock.fencingTokens !== undefined ||
      lock.deadline - now < lock.ttl / 2
    )
      return false;
    const entry = this.slots.get(holding.resources[0]);
    if (!entry || entry.held.get(holding.slots[0]) !== lock) return false;
    for (const waiter of entry.waiters) {
      const next = waiter.take?.(lock);
      if (!next) continue;
      this.hold(holding.resources, holding.slots, next, lock);
      return true;
    }
    return false;
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
      // Otherwise its lease passed on (passOn): nothing freed.
      if (entry.held.get(slots[j]) === lock) {
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
