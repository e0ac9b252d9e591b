import { Inject } from '@nestjs/common';
import { getLockServiceToken, getRedlockToken } from '../redlock.constants.js';

/**
 * Injects the `LockService` of a lock set: the one registered by
 * `RedlockModule.forRoot({ name, ... })`, or the default set's without a
 * name (the same as injecting `LockService`).
 *
 * ```ts
 * constructor(@InjectLockService('payments') private readonly payments: LockService) {}
 * ```
 *
 * @publicApi
 */
export function InjectLockService(
  name?: string,
): PropertyDecorator & ParameterDecorator {
  return Inject(getLockServiceToken(name));
}

/**
 * Injects the framework-free `Redlock` of a lock set (see
 * {@link InjectLockService}).
 *
 * @publicApi
 */
export function InjectRedlock(
  name?: string,
): PropertyDecorator & ParameterDecorator {
  return Inject(getRedlockToken(name));
}
