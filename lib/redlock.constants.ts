/**
 * Injection token of `LockService`, shared by every copy of the package (its
 * CommonJS and ESM builds) through `Symbol.for`, so a decorator from one copy
 * finds the service registered by the other.
 *
 * @publicApi
 */
export const LOCK_SERVICE = Symbol.for('nestjs-redlock:LockService');

/**
 * Injection token of the framework-free `Redlock` core behind `LockService`.
 *
 * @publicApi
 */
export const REDLOCK = Symbol.for('nestjs-redlock:Redlock');

/** Name of the module's logger context. */
export const REDLOCK_LOGGER_CONTEXT = 'Redlock';
