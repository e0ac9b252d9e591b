import type { Lock } from '../lock.js';
import { BARGE_WINDOW_MS } from '../scripts/acquire.script.js';

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
 * Lines alive before a new one makes the queue look for lines of locks
 * that ran out without a release (see `sweep`); then twice as many as are
 * left, so the search costs each new line a constant share.
 */
export const LINES_BEFORE_SWEEP = 1000;

/**
 * Streaks in a row whose end renewed the lease on the nodes instead of
 * releasing it (see `renewForNext`), after which the lock is
 * released and acquired again. The renewal only sees waiters queued on the
 * nodes; a waiter that polls (`JitteredRetry`, another library) is not
 * queued and only gets a free key between a release and the next acquire.
 */
export const MAX_RENEWALS = 3;

/**
 * The line a caller waits in: its keys, and whether it wants fencing
 * tokens (a handed-over lease has none, so fenced callers queue apart).
 * Distinct for distinct key lists, whatever characters resource names hold:
 * a line shared by two resource sets would hand one's lease to the other.
 */
export function lineOf(keys: readonly string[], fencing: boolean): string {
  // One key without fencing, the common case: one concatenation.
  if (keys.length === 1 && !fencing) return '1' + keys[0];
  return (fencing ? 'f' : 'm') + JSON.stringify(keys);
}

/**
 * What a caller waiting in a line gets: its turn (it goes to the nodes),
 * the previous holder's lease handed over (already held), or the end of
 * its wait.
 */
export type TurnResult =
  | { readonly kind: 'turn' }
  | { readonly kind: 'handed'; readonly lock: Lock }
  | { readonly kind: 'timedOut' };

/** The caller's turn: it goes to the nodes. */
export const YOUR_TURN: TurnResult = { kind: 'turn' };
/** The caller's wait ran out (or `quit()` ran) before its turn. */
export const TIMED_OUT: TurnResult = { kind: 'timedOut' };

/** The lease of `lock` handed to the caller. */
export function handed(lock: Lock): TurnResult {
  return { kind: 'handed', lock };
}

/** One caller waiting in a line. */
export interface Turn {
  /** The lease the caller asks for (ms): only a lock with that lease is handed to it. */
  readonly lease: number;
  readonly give: (result: TurnResult) => void;
  /** It does not wait past the moment the caller before it holds (see `LocalQueue.enter`). */
  untilHeld?: boolean;
}

/** Callers of one process waiting for the same set of keys: one line. */
export interface LineState {
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
export interface Lingering {
  readonly lock: Lock;
  /** The adopter's lock, or `undefined` when too little of the lease is left by now. */
  readonly next: () => Lock | undefined;
  readonly expire: () => void;
  readonly immediate: NodeJS.Immediate;
  /** When it was released (clock ms). */
  readonly since: number;
}

/** A lock's lease as callers ask for it (whole ms). */
export function leaseOf(lock: Lock): number {
  return Math.ceil(lock.ttl);
}

/** True when `lock` holds the turn and the next waiter asked for its lease. */
export function nextTakes(line: LineState, lock: Lock): boolean {
  return line.holder === lock && line.waiting[0]?.lease === leaseOf(lock);
}

/**
 * True when `maxStreak` leases passed in a row without Redis, or the first
 * of them `LOCAL_HANDOFF_WINDOW_MS` before `now`: the streak starts over,
 * and this lock goes back through the nodes.
 */
export function streakEnds(
  line: LineState,
  maxStreak: number,
  now: number,
): boolean {
  if (
    line.streak < maxStreak &&
    (line.streak === 0 || now - line.streakSince < LOCAL_HANDOFF_WINDOW_MS)
  )
    return false;
  line.streak = 0;
  return true;
}

/** The holder's lease passes to another caller of the line, without Redis, at `now`. */
export function passTurn(line: LineState, now: number): void {
  if (line.streak++ === 0) line.streakSince = now;
  vacate(line);
}

/** The holder's validity ran out and it was never released: nobody will pass its turn on. */
export function abandoned(line: LineState): boolean {
  const holder = line.holder;
  return holder !== undefined && !holder.isReleased && !holder.isHeld;
}

/** The line has no holder any more (and stops watching its validity). */
export function vacate(line: LineState): void {
  clearTimeout(line.timer);
  line.timer = undefined;
  line.holder = undefined;
}
