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

/** Injection token of the options of one `RedlockModule` import (module-local). */
export const REDLOCK_MODULE_OPTIONS = 'REDLOCK_MODULE_OPTIONS';

/** Injection token of where one lock set's warnings go (module-local). */
export const LOCK_SET_LOGGER = 'REDLOCK_LOCK_SET_LOGGER';

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

/**
 * Injection token of the `LockService` of a lock set: the default set's
 * (`LOCK_SERVICE`) without a name, else the set registered by
 * `RedlockModule.forRoot({ name, ... })`. Prefer `@InjectLockService(name)`.
 *
 * @publicApi
 */
export function getLockServiceToken(name?: string): symbol {
  return name === undefined
    ? LOCK_SERVICE
    : Symbol.for(`nestjs-redlock:LockService:${name}`);
}

/**
 * Injection token of the `Redlock` core of a lock set (see
 * {@link getLockServiceToken}).
 *
 * @publicApi
 */
export function getRedlockToken(name?: string): symbol {
  return name === undefined
    ? REDLOCK
    : Symbol.for(`nestjs-redlock:Redlock:${name}`);
}

/** The property that receives the `LockService` of a lock set (see `LOCK_SERVICE_REF`). */
export function lockServiceRef(name?: string): symbol {
  return name === undefined
    ? LOCK_SERVICE_REF
    : Symbol.for(`nestjs-redlock:LockService.ref:${name}`);
}

/**
 * Module-local token of the lock set a `RedlockModule` import registers:
 * its name and its `LockService`, for the module's own providers.
 */
export const LOCK_SET = Symbol('nestjs-redlock:lock-set');

/** Module-local token of the `Redlock` of one `RedlockModule` import. */
export const LOCK_SET_REDLOCK = Symbol('nestjs-redlock:lock-set-redlock');
