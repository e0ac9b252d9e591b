import type { OnLockLost } from '../core/config/options.js';
import type { RetryAfter } from '../utils/retry-after.js';

/**
 * What a `@Locked` method locks:
 * - a template: `'order:<id>'`, `'sku:<dto.sku>'`, `'user:<0>'`,
 *   `'sku:<dto.items.*.sku>'` (one resource per element);
 * - a list of templates: `['order:<id>', 'customer:<dto.customerId>']`;
 * - a function of the call's arguments (called with the instance as `this`)
 *   returning one resource or a list.
 *
 * @publicApi
 */
export type LockedKey =
  string | readonly string[] | ((...args: any[]) => string | readonly string[]);

/**
 * What a `@Locked` method does when its lock is held by someone else after
 * `waitTimeout`:
 * - `'throw'` (default): the call rejects with `LockNotAcquiredError`
 *   (HTTP 409 in a controller).
 * - `'skip'`: the call resolves `undefined` without running the method (the
 *   "only one replica runs this @Cron job" case; set `waitTimeout: 0`, and
 *   `minHold` for once per tick). Only when the resources are held (reason
 *   `busy`) or the app is shutting down: an outage (a quorum of nodes
 *   unreachable, or no validity left) still rejects, see
 *   {@link OnUnavailable}. Never in a queue processor: the job would count
 *   as done (docs/contexts.md).
 *
 * @publicApi
 */
export type OnNotAcquired = 'throw' | 'skip';

/**
 * With `onNotAcquired: 'skip'`, what a call does when the lock service
 * could not decide (reasons `unreachable` and `expired`):
 * - `'throw'` (default): rejects with `LockNotAcquiredError`, so an outage
 *   never looks like "someone else is on it";
 * - `'warn'`: logs one warning with the cause (the module's logger) and
 *   resolves `undefined` without running the method.
 *
 * @publicApi
 */
export type OnUnavailable = 'throw' | 'warn';

/**
 * Options of `@Locked` and `@LockKey`; each overrides the module's.
 *
 * @publicApi
 */
export interface LockedOptions {
  /** Lease in ms, extended every third of it while the method runs. */
  ttl?: number;
  /** How long to wait for a held lock, in ms; 0 = one attempt. */
  waitTimeout?: number;
  /** Base delay between attempts, in ms. */
  retryDelay?: number;
  /** Random extra delay, 0 to this many ms, added to `retryDelay`. */
  retryJitter?: number;
  /** How long one request to one node may take, in ms (below `ttl`). */
  nodeTimeout?: number;
  /** See `OnLockLost`. Default `'throw'`. */
  onLockLost?: OnLockLost;
  /** Longest time in ms the watchdog keeps the lock alive; then it counts as lost. */
  maxHold?: number;
  /** See {@link OnNotAcquired}. Default `'throw'`. */
  onNotAcquired?: OnNotAcquired;
  /** See {@link OnUnavailable}. Default `'throw'`. */
  onUnavailable?: OnUnavailable;
  /**
   * Shortest time in ms the lock is held from the start of the call, even
   * when the method returns sooner (it returns then; the lock's keys are
   * left to expire at `minHold`, also across a shutdown): once per tick
   * for scheduled jobs on several replicas. Default 0.
   */
  minHold?: number;
  /**
   * Give the lock a fencing token (`LockService.current()?.fencingToken`),
   * at the cost of one more round trip per acquire. Default: the module's
   * `fencing` option. A nested call that joins a held lock sees that lock's
   * token.
   */
  fencing?: boolean;
  /**
   * The lock set to lock with: the `name` of a `RedlockModule.forRoot({
   * name, ... })` import (its own Redis nodes and options). Default: the
   * unnamed set. A name that no import registers fails application start.
   * `@Locked` only (`LockInterceptor` uses the default set).
   */
  lockSet?: string;
  /**
   * The `Retry-After` of the HTTP answer when this method's lock is held
   * elsewhere, in ms (sent as whole seconds) or a function of the conflict.
   * Default: the module's `retryAfter`. See {@link RetryAfter}.
   */
  retryAfter?: RetryAfter;
}
