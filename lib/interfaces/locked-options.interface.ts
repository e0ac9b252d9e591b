import type { RunOptions } from '../core/config/options.js';
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
 * Options of `@Locked` and `@LockKey`; each overrides the module's: the
 * options of `LockService.run()` (but `signal`: a decorated method has no
 * caller to abort it) and the ones below, which only Nest has.
 *
 * @publicApi
 */
export interface LockedOptions extends Omit<RunOptions, 'signal'> {
  /** See {@link OnNotAcquired}. Default `'throw'`. */
  onNotAcquired?: OnNotAcquired;
  /** See {@link OnUnavailable}. Default `'throw'`. */
  onUnavailable?: OnUnavailable;
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
