import type { RedlockOptions } from '../core/config/options.js';
import type { RetryAfter } from '../utils/retry-after.js';

/**
 * Options of `RedlockModule.forRoot()` / the factory of `forRootAsync()`:
 * the core's options, and the HTTP answer's `retryAfter`. Warnings go to a
 * Nest `Logger` (context `Redlock`) unless `logger` is given.
 *
 * @publicApi
 */
export interface RedlockModuleOptions extends RedlockOptions {
  /**
   * The `Retry-After` of HTTP answers to this lock set's conflicts, in ms
   * (sent as whole seconds) or a function of the conflict; `@Locked` may
   * set its own. Default: the error's `retryAfter`, the holder's remaining
   * lease. See {@link RetryAfter}.
   */
  retryAfter?: RetryAfter;
}
