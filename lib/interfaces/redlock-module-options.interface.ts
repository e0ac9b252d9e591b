import type { RedlockOptions } from '../core/config/options.js';

/**
 * Options of `RedlockModule.forRoot()` / the factory of `forRootAsync()`:
 * the core's options. Warnings go to a Nest `Logger` (context `Redlock`)
 * unless `logger` is given.
 *
 * @publicApi
 */
export type RedlockModuleOptions = RedlockOptions;
