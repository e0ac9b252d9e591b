import { Inject, Logger, Optional } from '@nestjs/common';
import { finalize, isObservable, Observable, throwError } from 'rxjs';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { LockServiceUnavailableError } from '../errors/lock-service-unavailable.error.js';
import type {
  LockedOptions,
  LockedKey,
} from '../interfaces/locked-options.interface.js';
import {
  argumentLookup,
  checkPlaceholders,
  compileKey,
  describeSignature,
  resolveKey,
  type CompiledKey,
} from '../keys/lock-key.js';
import { parameterNames } from '../keys/parameter-names.js';
import {
  lockedMetadata,
  type LockedMetadata,
} from '../locked-metadata.accessor.js';
import type { LockService } from '../lock.service.js';
import {
  getLockServiceToken,
  LOCKED_METADATA,
  lockServiceRef,
  REDLOCK_LOGGER_CONTEXT,
} from '../redlock.constants.js';
import { lockObservable } from '../utils/lock-observable.js';
import { checkLockedOptions, toRunOptions } from '../utils/locked-options.js';
import { runLocked, SKIPPED } from '../utils/run-locked.js';
import { wrapMethod } from '../utils/wrap-method.js';

/** The lock sets whose `LockService` a class's instances get injected (once per set and hierarchy). */
const INJECTS_LOCK_SERVICE = Symbol.for('nestjs-redlock:injects-lock-service');

/**
 * Has Nest inject the `LockService` of `lockSet` into the instances of
 * `target`'s class. A named set's is optional, so that a set no import
 * registers fails start with the explorer's message naming it rather than
 * Nest's unresolved dependency.
 */
function injectLockService(target: object, lockSet: unknown): void {
  const set = typeof lockSet === 'string' ? lockSet : undefined;
  const recorded: unknown = Reflect.getMetadata(
    INJECTS_LOCK_SERVICE,
    target.constructor,
  );
  const injected = Array.isArray(recorded)
    ? (recorded as (string | undefined)[])
    : [];
  if (injected.includes(set)) return;
  if (set !== undefined) Optional()(target, lockServiceRef(set));
  Inject(getLockServiceToken(set))(target, lockServiceRef(set));
  Reflect.defineMetadata(
    INJECTS_LOCK_SERVICE,
    [...injected, set],
    target.constructor,
  );
}

type LockableMethod = (...args: any[]) => Promise<any> | Observable<any>;

/**
 * Every call of the method holds a distributed lock on the resources its
 * key names, kept alive by a watchdog while the method runs and released
 * before the call settles.
 *
 * ```ts
 * @Locked('order:<id>')                      // a parameter
 * @Locked('sku:<dto.sku>')                   // a property path in a parameter
 * @Locked('user:<0>') / @Locked('user:<0.id>') // by position (survives minifiers)
 * @Locked('sku:<dto.items.*.sku>')           // one resource per element, all or nothing
 * @Locked(['order:<id>', 'customer:<dto.customerId>'])
 * @Locked((id: string, dto: OrderDto) => [`order:${id}`, ...dto.tags])
 * @Locked('report', { waitTimeout: 0, onNotAcquired: 'skip', minHold: 500 })   // one run per @Cron tick
 * ```
 *
 * Works on methods of any Nest-created provider or controller, above or
 * below `@Get()`/`@Post()`/`@HttpCode()`. The method must return a Promise
 * (write it `async`) or an Observable (declare the return type
 * `Observable<T>`: the lock is then taken per subscription and held until
 * it completes, errors or is unsubscribed). Inside, `LockService.current()`
 * gives the lock and its `signal`. A placeholder naming no parameter, or a
 * bad option, fails application start; a value that cannot name a resource
 * rejects the call with `LockKeyError` before the method runs.
 *
 * @publicApi
 */
export function Locked(key: LockedKey, options: LockedOptions = {}) {
  return <T extends LockableMethod>(
    target: object,
    propertyKey: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ): TypedPropertyDescriptor<T> => {
    const className =
      typeof target === 'function'
        ? (target as { name: string }).name
        : target.constructor.name;
    const methodName = String(propertyKey);
    const method = `${className}.${methodName}`;
    if (typeof target === 'function')
      throw new RedlockConfigError(
        `@Locked on ${method}`,
        'static methods cannot be locked (no instance to receive LockService); lock an instance method or use LockService.run()',
      );
    const original = descriptor.value;
    if (typeof original !== 'function')
      throw new RedlockConfigError(
        `@Locked on ${method}`,
        'applies to methods only, not to accessors or fields',
      );
    const meta = describe(method, methodName, key, options, original);
    meta.observable ||= returnsObservable(
      Reflect.getMetadata('design:returntype', target, propertyKey),
    );
    const wrapper = wrapMethod(original, (fn, thisArg, args) =>
      invoke(meta, fn, thisArg, args),
    );
    Reflect.defineMetadata(LOCKED_METADATA, meta, wrapper);
    injectLockService(target, options.lockSet);
    descriptor.value = wrapper;
    return descriptor;
  };
}

function describe(
  method: string,
  methodName: string,
  key: LockedKey,
  options: LockedOptions,
  original: (...args: any[]) => unknown,
): { -readonly [K in keyof LockedMetadata]: LockedMetadata[K] } {
  const params = parameterNames(original);
  const signature = describeSignature(methodName, params);
  const problems: string[] = [];
  if (lockedMetadata.locked(original))
    problems.push('@Locked is applied twice to the same method');
  let compiled: CompiledKey | undefined;
  try {
    compiled = compileKey(key);
    problems.push(...checkPlaceholders(compiled, params, signature));
  } catch (error) {
    problems.push(`key: ${(error as Error).message}`);
  }
  problems.push(...checkLockedOptions(options));
  return {
    method,
    signature,
    key: compiled,
    params,
    options,
    runOptions: problems.length ? {} : toRunOptions(options),
    serviceRef: lockServiceRef(
      typeof options.lockSet === 'string' ? options.lockSet : undefined,
    ),
    observable: false,
    problems,
  };
}

/** The configuration error bootstrap (or, without it, the first call) reports. */
export function lockedProblem(meta: LockedMetadata): RedlockConfigError {
  return new RedlockConfigError(
    `@Locked on ${meta.method}`,
    meta.problems.join('; '),
  );
}

function invoke(
  meta: LockedMetadata,
  original: (...args: any[]) => unknown,
  thisArg: unknown,
  args: unknown[],
): unknown {
  // Everything that can go wrong before locking is reported through the
  // method's own channel (a rejection or an error notification), so callers
  // handle it where they handle the method's errors.
  const service = lockServiceOf(meta, thisArg);
  if (service instanceof Error)
    return meta.observable
      ? throwError(() => service)
      : Promise.reject(service);
  const resources = () =>
    resolveKey(
      meta.key!,
      argumentLookup(meta.params, args),
      meta.method,
      thisArg,
      args,
    );
  const lockedCall = {
    caller: `@Locked ${meta.method}`,
    skip: meta.options.onNotAcquired === 'skip',
    onUnavailable: meta.options.onUnavailable,
    logger: service.logger,
    retryAfter: meta.options.retryAfter ?? service.retryAfter,
  };
  const call = () => Reflect.apply(original, thisArg, args) as unknown;
  if (meta.observable)
    return lockObservable(
      service.redlock,
      resources,
      call as () => Observable<unknown>,
      meta.runOptions,
      lockedCall,
    );
  return new Promise((resolve, reject) => {
    runLocked(
      service.redlock,
      resources(),
      () => {
        const result = call();
        if (!isObservable(result)) return result;
        // Declared without `Observable<T>`: hand the Observable out now and
        // keep the lock until it finalizes (Nest subscribes to it at once).
        warnUndeclaredObservable(meta);
        return new Promise<void>((done) =>
          resolve(result.pipe(finalize(done))),
        );
      },
      meta.runOptions,
      lockedCall,
    ).then((value) => resolve(value === SKIPPED ? undefined : value), reject);
  });
}

function lockServiceOf(
  meta: LockedMetadata,
  thisArg: unknown,
): LockService | Error {
  if (meta.problems.length) return lockedProblem(meta);
  const service =
    thisArg !== null && typeof thisArg === 'object'
      ? (thisArg as Record<symbol, LockService | undefined>)[meta.serviceRef]
      : undefined;
  if (!service?.redlock)
    return new LockServiceUnavailableError(
      `@Locked ${meta.method}`,
      thisArg === undefined || thisArg === null || thisArg === globalThis
        ? 'detached'
        : 'unmanaged',
    );
  return service;
}

const warned = new WeakSet<LockedMetadata>();
function warnUndeclaredObservable(meta: LockedMetadata): void {
  if (warned.has(meta)) return;
  warned.add(meta);
  new Logger(REDLOCK_LOGGER_CONTEXT).warn(
    `@Locked ${meta.method} returned an Observable but its return type is not declared \`Observable<T>\`: the call returned a Promise of it, and the lock is held until that Observable finalizes. Declare the return type so callers get the Observable itself and the lock is taken per subscription.`,
  );
}

/** True for `Observable` (of any rxjs copy) or a subclass, as `design:returntype`. */
function returnsObservable(type: unknown): boolean {
  if (typeof type !== 'function') return false;
  const proto = (type as { prototype?: Record<string, unknown> }).prototype;
  return (
    type === Observable ||
    proto instanceof Observable ||
    (typeof proto?.subscribe === 'function' && typeof proto.pipe === 'function')
  );
}
