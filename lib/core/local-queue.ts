import type { Lock } from './lock.js';
import { abortReason } from './run-options.js';
import { BARGE_WINDOW_MS } from './scripts/acquire.script.js';

/**
 * How long, in ms, leases may keep passing between callers of one process
 * after the first pass of a streak, whatever `localHandoff` allows: the
 * same bound the nodes give newcomers over a queued waiter
 * (`BARGE_WINDOW_MS`). With 1 ms critical sections the count ends a streak
 * long before this; with long ones (hundreds of ms) the count alone would
 * let one process keep a lock for seconds while another process waits.
 */
export const LOCAL_HANDOFF_WINDOW_MS = BARGE_WINDOW_MS;

/**
 * Streaks in a row whose end renewed the lease on the nodes instead of
 * releasing it (see `Redlock.renewForNext`), after which the lock is
 * released and acquired again. The renewal only sees waiters queued on the
 * nodes; a waiter that polls (`JitteredRetry`, another library) is not
 * queued and only gets a free key between a release and the next acquire.
 */
export const MAX_RENEWALS = 3;

/**
 * Lines alive before a new one makes the queue look for lines of locks
 * that ran out without a release (see `sweep`); then twice as many as are
 * left, so the search costs each new line a constant share.
 */
export const LINES_BEFORE_SWEEP = 1000;

interface Turn {
  /** The lease the caller asks for (ms): only a lock with that lease is handed to it. */
  readonly lease: number;
  /** true: go to Redis; a Lock: the lease handed over; false: timed out. */
  readonly give: (mine: boolean | Lock) => void;
}

/** Callers of one process waiting for the same set of keys. */
interface Line {
  /** The lock of the caller whose turn it is, once it holds it. */
  holder?: Lock;
  readonly waiting: Turn[];
  /** Watches the holder's validity for the first waiter (see `watchHolder`). */
  timer?: NodeJS.Timeout;
  /** Leases handed over in a row without going through Redis. */
  streak: number;
  /** When the first lease of the current streak was handed over (clock ms). */
  streakSince: number;
  /** Streaks in a row ended by a renewal on the nodes (see `renewTo`). */
  renewals: number;
  /** A lease released a moment ago, kept for a caller that asks before the event loop turns (see `linger`). */
  lingering?: Lingering;
}

/** A released lease waiting for an adopter until the end of the turn. */
interface Lingering {
  readonly lock: Lock;
  /** The adopter's lock, or `undefined` when too little of the lease is left by now. */
  readonly next: () => Lock | undefined;
  readonly expire: () => void;
  readonly immediate: NodeJS.Immediate;
  /** When it was released (clock ms). */
  readonly since: number;
}

/**
 * Waiting acquires of one process for the same resources queue here, first
 * come first served: only the caller whose turn it is talks to Redis, the
 * others wait in-process, so a hundred waiters in one replica cost the nodes
 * what one costs. The turn passes when its caller gives up, or its lock is
 * released, lost, or runs out of validity. A line exists only while someone
 * holds or waits: no per-resource state outlives its lock (a lock left to
 * expire unreleased keeps its line until the next `sweep`).
 */
export class LocalQueue {
  private readonly lines = new Map<string, Line>();
  private sweepAt = LINES_BEFORE_SWEEP;

  /** @internal Lines alive (0 when no lock is held nor awaited). */
  get size(): number {
    return this.lines.size;
  }

  /** True when a caller of this process already holds or waits for `id`. */
  isBusy(id: string): boolean {
    return this.lines.has(id);
  }

  /** True when a caller of this process waits for its turn on `id`. */
  hasWaiters(id: string): boolean {
    return (this.lines.get(id)?.waiting.length ?? 0) > 0;
  }

  /**
   * Waits for the caller's turn on `id`. Resolves `true` when it is ours
   * (then `hold` or `leave` must follow), a `Lock` when the previous holder
   * handed its lease over (already held: `hold` follows), `false` when
   * `timeoutMs` ran out first; rejects with the signal's reason when aborted.
   * `lease` (ms, whole): the lease asked for; a lock with another lease is
   * never handed to this caller.
   */
  enter(
    id: string,
    lease: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<boolean | Lock> {
    const line = this.lines.get(id);
    if (!line) {
      if (this.lines.size >= this.sweepAt) this.sweep();
      this.lines.set(id, {
        waiting: [],
        streak: 0,
        streakSince: 0,
        renewals: 0,
      });
      return Promise.resolve(true);
    }
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const adopted = this.adopt(line, lease);
    if (adopted) return Promise.resolve(adopted);
    // Otherwise a lingering release went to the nodes, and this caller
    // waits for it like any other.
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        const i = line.waiting.indexOf(turn);
        if (i >= 0) line.waiting.splice(i, 1);
      };
      const turn: Turn = {
        lease,
        give: (mine) => {
          finish();
          resolve(mine);
        },
      };
      const aborted = () => {
        finish();
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => turn.give(false), timeoutMs);
      signal?.addEventListener('abort', aborted, { once: true });
      line.waiting.push(turn);
      this.watchHolder(id, line);
    });
  }

  /**
   * The lease released a moment ago on `id` and kept for whoever asks next
   * (see `linger`), for a caller that does not queue (`tryAcquire`): the
   * lock if it asked for that lease and enough of it is left (then `hold`
   * follows); otherwise that release goes to the nodes now, ahead of the
   * caller's own request on each connection.
   */
  takeLingering(id: string, lease: number): Lock | undefined {
    const line = this.lines.get(id);
    return line && this.adopt(line, lease);
  }

  private adopt(line: Line, lease: number): Lock | undefined {
    const lingering = line.lingering;
    if (!lingering) return undefined;
    const adopted =
      leaseOf(lingering.lock) === lease ? lingering.next() : undefined;
    if (!adopted) {
      this.expire(line, lingering);
      return undefined;
    }
    line.lingering = undefined;
    clearImmediate(lingering.immediate);
    passTurn(line, lingering.since);
    return adopted;
  }

  /** The caller whose turn it is now holds `lock`; the turn passes when it is lost. */
  hold(id: string, lock: Lock): void {
    const line = this.lines.get(id);
    if (!line) return;
    line.holder = lock;
    lock.onLost(() => this.leave(id, lock));
    this.watchHolder(id, line);
  }

  /** The lock holding the turn on `id`, if any. */
  holderOf(id: string): Lock | undefined {
    return this.lines.get(id)?.holder;
  }

  /**
   * Hands the lease of `lock` (which holds the turn) to the next waiter as
   * `next`, skipping Redis, unless nobody waits, the next waiter asked for
   * another lease, or `maxStreak` leases were already handed over in a row
   * (then the lock goes back through Redis, so waiters of other processes
   * get their chance), or the streak began `LOCAL_HANDOFF_WINDOW_MS` ago.
   * `now`: the caller's clock. Returns whether it did.
   */
  handOver(
    id: string,
    lock: Lock,
    maxStreak: number,
    now: number,
    next: () => Lock,
  ): boolean {
    const line = this.lines.get(id);
    if (!line || !nextTakes(line, lock)) return false;
    if (streakEnds(line, maxStreak, now)) return false;
    passTurn(line, now);
    line.waiting.shift()!.give(next());
    return true;
  }

  /**
   * True when the lease of `lock`, holding the turn on `id`, may be renewed
   * for the next waiter (see `renewTo`): it asked for the same lease, and
   * fewer than `MAX_RENEWALS` streaks in a row ended so.
   */
  mayRenew(id: string, lock: Lock): boolean {
    const line = this.lines.get(id);
    return (
      line !== undefined &&
      line.renewals < MAX_RENEWALS &&
      nextTakes(line, lock)
    );
  }

  /**
   * Gives the next waiter of `id`, if it asked for the same lease, the
   * lease of `lock` (which holds the turn) renewed on the nodes, as `next`.
   * The renewal was a trip through Redis: a new streak starts. Returns
   * whether it did.
   */
  renewTo(id: string, lock: Lock, next: () => Lock): boolean {
    const line = this.lines.get(id);
    if (!line || !nextTakes(line, lock)) return false;
    line.streak = 0;
    line.renewals++;
    vacate(line);
    line.waiting.shift()!.give(next());
    return true;
  }

  /**
   * Keeps the lease of `lock` (which holds the turn; nobody waits) for a
   * caller of this process that asks for `id` before the event loop turns:
   * a worker that asks again right after its release, in the microtasks
   * that follow it. That caller gets it as `next` (see `enter`), unless
   * `next` finds too little of the lease left by then; if nobody
   * asks, `expire` runs at the end of the turn (then the lock goes through
   * Redis). Counts toward the same streak, bounded alike, as `handOver`.
   * Returns whether it kept the lease.
   */
  linger(
    id: string,
    lock: Lock,
    maxStreak: number,
    now: number,
    next: () => Lock | undefined,
    expire: () => void,
  ): boolean {
    const line = this.lines.get(id);
    if (!line || line.holder !== lock || line.waiting.length > 0) return false;
    if (streakEnds(line, maxStreak, now)) return false;
    const lingering: Lingering = {
      lock,
      next,
      expire,
      immediate: setImmediate(() => this.expire(line, lingering)),
      since: now,
    };
    line.lingering = lingering;
    return true;
  }

  /** Passes the turn to the next caller, or ends the line. `lock`: only if it still holds the turn. */
  leave(id: string, lock?: Lock): void {
    const line = this.lines.get(id);
    if (!line || (lock && line.holder !== lock)) return;
    vacate(line);
    line.streak = 0;
    line.renewals = 0;
    const next = line.waiting.shift();
    if (next) next.give(true);
    else this.lines.delete(id);
  }

  /** Tells every caller still waiting for its turn that the time is up (`Redlock.quit()`). */
  closeAll(): void {
    for (const line of this.lines.values()) {
      for (const turn of [...line.waiting]) turn.give(false);
      if (line.lingering) this.expire(line, line.lingering);
    }
  }

  /**
   * Ends the lines whose holder's validity ran out without a release and
   * that nobody waits for: a lock acquired and left to expire (a common way
   * to run something once per key) would otherwise keep its line, and its
   * Lock, for good. A line someone waits for is ended by `watchHolder`.
   */
  private sweep(): void {
    for (const [id, line] of this.lines) {
      if (abandoned(line) && line.waiting.length === 0 && !line.lingering) {
        vacate(line);
        this.lines.delete(id);
      }
    }
    this.sweepAt = Math.max(LINES_BEFORE_SWEEP, 2 * this.lines.size);
  }

  private expire(line: Line, lingering: Lingering): void {
    if (line.lingering !== lingering) return;
    line.lingering = undefined;
    clearImmediate(lingering.immediate);
    lingering.expire();
  }

  /**
   * A lock its caller never releases would block the line until each
   * waiter's timeout: the first waiter watches the holder's validity and
   * takes the turn when it runs out (the keys have expired on the nodes by then).
   */
  private watchHolder(id: string, line: Line): void {
    if (line.timer || !line.holder || line.waiting.length === 0) return;
    const holder = line.holder;
    line.timer = setTimeout(() => {
      line.timer = undefined;
      if (line.holder !== holder) return;
      if (holder.isHeld) this.watchHolder(id, line);
      else this.leave(id, holder);
    }, holder.remaining() + 1);
    line.timer.unref();
  }
}

/** A lock's lease as callers ask for it (whole ms). */
function leaseOf(lock: Lock): number {
  return Math.ceil(lock.ttl);
}

/** True when `lock` holds the turn and the next waiter asked for its lease. */
function nextTakes(line: Line, lock: Lock): boolean {
  return line.holder === lock && line.waiting[0]?.lease === leaseOf(lock);
}

/**
 * True when `maxStreak` leases passed in a row without Redis, or the first
 * of them `LOCAL_HANDOFF_WINDOW_MS` before `now`: the streak starts over,
 * and this lock goes back through the nodes.
 */
function streakEnds(line: Line, maxStreak: number, now: number): boolean {
  if (
    line.streak < maxStreak &&
    (line.streak === 0 || now - line.streakSince < LOCAL_HANDOFF_WINDOW_MS)
  )
    return false;
  line.streak = 0;
  return true;
}

/** The holder's lease passes to another caller of the line, without Redis, at `now`. */
function passTurn(line: Line, now: number): void {
  if (line.streak++ === 0) line.streakSince = now;
  vacate(line);
}

/** The holder's validity ran out and it was never released: nobody will pass its turn on. */
function abandoned(line: Line): boolean {
  const holder = line.holder;
  return holder !== undefined && !holder.isReleased && !holder.isHeld;
}

/** The line has no holder any more (and stops watching its validity). */
function vacate(line: Line): void {
  clearTimeout(line.timer);
  line.timer = undefined;
  line.holder = undefined;
}
