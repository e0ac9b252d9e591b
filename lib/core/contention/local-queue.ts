import type { Lock } from '../lock.js';
import { abortReason } from '../util/abort.js';
import {
  abandoned,
  handed,
  leaseOf,
  LINES_BEFORE_SWEEP,
  MAX_RENEWALS,
  nextTakes,
  passTurn,
  streakEnds,
  TIMED_OUT,
  vacate,
  YOUR_TURN,
  type LineState,
  type Lingering,
  type Turn,
  type TurnResult,
} from './line.js';

/**
 * Waiting acquires of one process for the same resources (a line, see
 * `lineOf`) queue here, first come first served: only the caller whose turn
 * it is talks to Redis, so a hundred waiters in one replica cost the nodes
 * what one costs. The turn passes when its caller gives up, or its lock is
 * released, lost, or runs out of validity. A line lives only while someone
 * holds or waits (one left to expire unreleased: until the next `sweep`).
 */
export class LocalQueue {
  private readonly lines = new Map<string, LineState>();
  private sweepAt = LINES_BEFORE_SWEEP;

  /** @internal Lines alive (0 when no lock is held nor awaited). */
  get size(): number {
    return this.lines.size;
  }

  /** True when a caller of this process waits for its turn on `line`. */
  hasWaiters(line: string): boolean {
    return (this.lines.get(line)?.waiting.length ?? 0) > 0;
  }

  /**
   * Waits for the caller's turn on `line`. Resolves `turn` when it is ours
   * (then `hold` or `leave` must follow), `handed` when the previous holder
   * handed its lease over (already held: `hold` follows), `timedOut` when
   * `timeoutMs` ran out first; rejects with the signal's reason when aborted.
   * `lease` (ms, whole): the lease asked for; a lock with another lease is
   * never handed to this caller. A caller that does not wait (`timeoutMs` 0)
   * behind one still acquiring waits until that one holds (then times out,
   * its holder known) or leaves (then goes itself), `untilHeldMs` at most:
   * its answer is then the nodes', as for the caller before it.
   */
  enter(
    line: string,
    lease: number,
    timeoutMs: number,
    signal?: AbortSignal,
    untilHeldMs?: number,
  ): Promise<TurnResult> {
    const state = this.lines.get(line);
    if (!state) {
      this.open(line);
      return Promise.resolve(YOUR_TURN);
    }
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const adopted = this.adopt(state, lease);
    if (adopted) return Promise.resolve(handed(adopted));
    // Otherwise a lingering release went to the nodes: wait like any other.
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        const i = state.waiting.indexOf(turn);
        if (i >= 0) state.waiting.splice(i, 1);
      };
      const turn: Turn = {
        lease,
        give: (result) => {
          finish();
          resolve(result);
        },
      };
      const aborted = () => {
        finish();
        reject(abortReason(signal!));
      };
      turn.untilHeld = timeoutMs === 0 && !state.holder && !!untilHeldMs;
      const ms = turn.untilHeld ? untilHeldMs : timeoutMs;
      const timer = setTimeout(() => turn.give(TIMED_OUT), ms);
      signal?.addEventListener('abort', aborted, { once: true });
      state.waiting.push(turn);
      this.watchHolder(line, state);
    });
  }

  /** Takes the turn on `line` at once when it is free, as `enter` would (then `hold` or `leave`); `false` when busy. */
  open(line: string): boolean {
    if (this.lines.has(line)) return false;
    if (this.lines.size >= this.sweepAt) this.sweep();
    this.lines.set(line, {
      waiting: [],
      streak: 0,
      streakSince: 0,
      renewals: 0,
    });
    return true;
  }

  /**
   * The lease released a moment ago on `line` and kept for whoever asks next
   * (see `linger`), for a caller that does not queue (`tryAcquire`): the
   * lock if it asked for that lease and enough of it is left (then `hold`
   * follows); otherwise that release goes to the nodes now, ahead of the
   * caller's own request on each connection.
   */
  takeLingering(line: string, lease: number): Lock | undefined {
    const state = this.lines.get(line);
    return state && this.adopt(state, lease);
  }

  private adopt(state: LineState, lease: number): Lock | undefined {
    const lingering = state.lingering;
    if (!lingering) return undefined;
    const adopted =
      leaseOf(lingering.lock) === lease ? lingering.next() : undefined;
    if (!adopted) {
      this.expire(state, lingering);
      return undefined;
    }
    state.lingering = undefined;
    clearImmediate(lingering.immediate);
    passTurn(state, lingering.since);
    return adopted;
  }

  /** The caller whose turn it is now holds `lock`; the turn passes when it is lost. */
  hold(line: string, lock: Lock): void {
    const state = this.lines.get(line);
    if (!state) return;
    state.holder = lock;
    for (const turn of [...state.waiting])
      if (turn.untilHeld) turn.give(TIMED_OUT);
    lock.onLost(() => this.leave(line, lock));
    this.watchHolder(line, state);
  }

  /** The lock holding the turn on `line`, if any. */
  holderOf(line: string): Lock | undefined {
    return this.lines.get(line)?.holder;
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
    line: string,
    lock: Lock,
    maxStreak: number,
    now: number,
    next: () => Lock,
  ): boolean {
    const state = this.lines.get(line);
    if (!state || !nextTakes(state, lock)) return false;
    if (streakEnds(state, maxStreak, now)) return false;
    passTurn(state, now);
    state.waiting.shift()!.give(handed(next()));
    return true;
  }

  /**
   * True when the lease of `lock`, holding the turn on `line`, may be renewed
   * for the next waiter (see `renewTo`): it asked for the same lease, and
   * fewer than `MAX_RENEWALS` streaks in a row ended so.
   */
  mayRenew(line: string, lock: Lock): boolean {
    const state = this.lines.get(line);
    return (
      state !== undefined &&
      state.renewals < MAX_RENEWALS &&
      nextTakes(state, lock)
    );
  }

  /**
   * Gives the next waiter of `line`, if it asked for the same lease, the
   * lease of `lock` (which holds the turn) renewed on the nodes, as `next`.
   * The renewal was a trip through Redis: a new streak starts. Returns
   * whether it did.
   */
  renewTo(line: string, lock: Lock, next: () => Lock): boolean {
    const state = this.lines.get(line);
    if (!state || !nextTakes(state, lock)) return false;
    state.streak = 0;
    state.renewals++;
    vacate(state);
    state.waiting.shift()!.give(handed(next()));
    return true;
  }

  /**
   * Keeps the lease of `lock` (which holds the turn; nobody waits) for a
   * caller of this process that asks for `line` before the event loop turns:
   * a worker that asks again right after its release, in the microtasks
   * that follow it. That caller gets it as `next` (see `enter`), unless
   * `next` finds too little of the lease left by then; if nobody
   * asks, `expire` runs at the end of the turn (then the lock goes through
   * Redis). Counts toward the same streak, bounded alike, as `handOver`.
   * Returns whether it kept the lease.
   */
  linger(
    line: string,
    lock: Lock,
    maxStreak: number,
    now: number,
    next: () => Lock | undefined,
    expire: () => void,
  ): boolean {
    const state = this.lines.get(line);
    if (!state || state.holder !== lock || state.waiting.length > 0)
      return false;
    if (streakEnds(state, maxStreak, now)) return false;
    const lingering: Lingering = {
      lock,
      next,
      expire,
      immediate: setImmediate(() => this.expire(state, lingering)),
      since: now,
    };
    state.lingering = lingering;
    return true;
  }

  /** Passes the turn to the next caller, or ends the line. `lock`: only if it still holds the turn. */
  leave(line: string, lock?: Lock): void {
    const state = this.lines.get(line);
    if (!state || (lock && state.holder !== lock)) return;
    vacate(state);
    state.streak = 0;
    state.renewals = 0;
    const next = state.waiting.shift();
    if (next) next.give(YOUR_TURN);
    else this.lines.delete(line);
  }

  /** Tells every caller still waiting for its turn that the time is up (`Redlock.quit()`). */
  closeAll(): void {
    for (const state of this.lines.values()) {
      for (const turn of [...state.waiting]) turn.give(TIMED_OUT);
      if (state.lingering) this.expire(state, state.lingering);
    }
  }

  /**
   * Ends the lines whose holder's validity ran out without a release and
   * that nobody waits for: a lock acquired and left to expire (a common way
   * to run something once per key) would otherwise keep its line, and its
   * Lock, for good. A line someone waits for is ended by `watchHolder`.
   */
  private sweep(): void {
    for (const [line, state] of this.lines) {
      if (abandoned(state) && state.waiting.length === 0 && !state.lingering) {
        vacate(state);
        this.lines.delete(line);
      }
    }
    this.sweepAt = Math.max(LINES_BEFORE_SWEEP, 2 * this.lines.size);
  }

  private expire(state: LineState, lingering: Lingering): void {
    if (state.lingering !== lingering) return;
    state.lingering = undefined;
    clearImmediate(lingering.immediate);
    lingering.expire();
  }

  /**
   * A lock its caller never releases would block the line until each
   * waiter's timeout: the first waiter watches the holder's validity and
   * takes the turn when it runs out (the keys have expired on the nodes by then).
   */
  private watchHolder(line: string, state: LineState): void {
    if (state.timer || !state.holder || state.waiting.length === 0) return;
    const holder = state.holder;
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (state.holder !== holder) return;
      if (holder.isHeld) this.watchHolder(line, state);
      else this.leave(line, holder);
    }, holder.remaining() + 1);
    state.timer.unref();
  }
}
