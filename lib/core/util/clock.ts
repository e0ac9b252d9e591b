import { performance } from 'node:perf_hooks';

/**
 * The one source of time for the lock algorithm.
 *
 * Validity is computed from `now()`, which must be monotonic: a wall clock
 * that an admin or NTP steps would make locks look valid for longer (or
 * shorter) than they are. Tests inject their own clock to simulate drift and
 * pauses.
 *
 * @publicApi
 */
export interface Clock {
  /** Monotonic milliseconds since an arbitrary origin. */
  now(): number;
  /** Converts a `now()` reading to epoch milliseconds, for display only (`Lock.validUntil`). */
  toEpoch(monotonic: number): number;
}

/**
 * The default clock: `performance.now()`, whose origin is fixed at process
 * start, so epoch values derive from it without reading `Date.now()`.
 *
 * @publicApi
 */
export const monotonicClock: Clock = {
  now: () => performance.now(),
  toEpoch: (monotonic) => performance.timeOrigin + monotonic,
};
