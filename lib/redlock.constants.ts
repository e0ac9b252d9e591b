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

/**
 * Metadata key under which `@Locked` stores its compiled key and options on
 * the wrapped method (read by the explorer at bootstrap).
 */
export const LOCKED_METADATA = Symbol.for('nestjs-redlock:locked');

/**
 * Metadata key of `@LockKey` (the key `LockInterceptor` locks).
 */
export const LOCK_KEY_METADATA = Symbol.for('nestjs-redlock:lock-key');

/**
 * Property under which Nest injects `LockService` into instances of classes
 * with `@Locked` methods. A symbol, so it stays out of `Object.keys` and JSON.
 */
export const LOCK_SERVICE_REF = Symbol.for('nestjs-redlock:LockService.ref');
