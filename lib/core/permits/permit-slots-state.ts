import { LOCAL_HANDOFF_WINDOW_MS } from '../contention/line.js';
import type { Lock } from '../lock.js';

// The state PermitBook keeps per resource and per lock, and the rules read
// from it alone: which slots to try, and whether a lease may pass on.

/** A caller of this process waiting for a permit. */
export interface PermitWaiter {
  /** Wakes it to ask the nodes again. */
  readonly wake: () => void;
  /**
   * Takes `lock`'s lease as it stands (see `PermitBook.passOn`): the
   * waiter's lock, or `undefined` when its call does not fit that lease.
   * Only single-resource waiters have it.
   */
  readonly take?: (lock: Lock) => Lock | undefined;
}

/** The slots a lock of this process holds, and how many times its lease passed on in a row. */
export interface Holding {
  readonly resources: readonly string[];
  readonly slots: readonly number[];
  /** Passes of this lease within the process so far, and when the first was (clock ms). */
  readonly streak: number;
  readonly since: number;
  /** Whether its acquire was refused first, or it was passed on: another caller is likely to ask next. */
  readonly contended: boolean;
}

/** A permit lease released a moment ago, kept until the event loop turns (see `PermitBook.linger`). */
export interface Lingering {
  readonly immediate: NodeJS.Immediate;
  /** Sends the release to the nodes (nobody took the lease). */
  readonly expire: () => void;
  /** Stops keeping it without a release (a caller took the lease). */
  readonly cancel: () => void;
}

/** One resource's permits as this process knows them. */
export interface PermitSlots {
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
  /** Leases released a moment ago and kept for a caller of this process that asks before the event loop turns. */
  readonly lingering: Map<Lock, Lingering>;
}

/** A new entry for a semaphore of `permits`. */
export function newPermitSlots(permits: number): PermitSlots {
  return {
    permits,
    users: 0,
    held: new Map(),
    busyUntil: new Map(),
    waiters: new Set(),
    frees: 0,
    claimed: 0,
    lingering: new Map(),
  };
}

/**
 * The slots to try, starting at a random one so that callers spread over
 * the slots: those this process does not hold, the ones not known to be
 * held elsewhere first (an attempt for one resource sends them all, and
 * each node takes the first free one).
 */
export function candidateSlots(entry: PermitSlots, now: number): number[] {
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

/**
 * Whether `lock`'s permit may pass to another caller of this process as it
 * stands: a single-resource lock without fencing tokens (a fenced grant
 * needs the quorum), not lost, with half its lease left, still holding its
 * slot in `entry`, and fewer than `limit` passes in a row within
 * `LOCAL_HANDOFF_WINDOW_MS` of the first.
 */
export function mayPass(
  entry: PermitSlots | undefined,
  holding: Holding,
  lock: Lock,
  limit: number,
  now: number,
): entry is PermitSlots {
  return (
    entry !== undefined &&
    holding.resources.length === 1 &&
    holding.streak < limit &&
    (holding.streak === 0 || now - holding.since < LOCAL_HANDOFF_WINDOW_MS) &&
    !lock.isLost &&
    lock.fencingTokens === undefined &&
    lock.deadline - now >= lock.ttl / 2 &&
    entry.held.get(holding.slots[0]) === lock
  );
}
