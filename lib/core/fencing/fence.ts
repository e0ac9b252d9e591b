import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import type { Lock } from '../lock.js';
import { show } from '../util/validate.js';
import { parseToken } from './tokens.js';

/**
 * The token a write is made with, and the resource it was issued for.
 *
 * @publicApi
 */
export interface Fence {
  readonly resource: string;
  readonly token: string;
}

/**
 * The fence of a lock acquired with `fencing: true`: its resource and token
 * (`resource` is required when the lock holds several).
 *
 * @publicApi
 */
export function fenceOf(lock: Lock, resource?: string): Fence {
  if (
    typeof lock !== 'object' ||
    lock === null ||
    !Array.isArray(lock.resources)
  )
    throw new RedlockConfigError('lock', `must be a Lock, got ${show(lock)}`);
  if (!lock.fencingTokens)
    throw new RedlockConfigError(
      'lock',
      `has no fencing token: acquire it with { fencing: true } (or set fencing: true in the module options)`,
    );
  const listed = lock.resources.map((r) => `"${r}"`).join(', ');
  if (resource === undefined && lock.resources.length !== 1)
    throw new RedlockConfigError(
      'resource',
      `is required for a lock on several resources (${listed})`,
    );
  const name = resource ?? lock.resources[0];
  const token = lock.fencingTokens.get(name);
  if (token === undefined)
    throw new RedlockConfigError(
      'resource',
      `${show(name)} is not one of the lock's resources (${listed})`,
    );
  return { resource: name, token };
}

export function resolveFence(fence: Fence | Lock): Fence {
  if (typeof fence !== 'object' || fence === null)
    throw new RedlockConfigError(
      'fence',
      `must be a Lock acquired with { fencing: true } or { resource, token }, got ${show(fence)}`,
    );
  if ('signal' in fence && 'resources' in fence) return fenceOf(fence);
  const { resource, token } = fence;
  checkResource(resource, 'fence.resource');
  parseToken('fence.token', token);
  return { resource, token };
}

export function checkResource(resource: unknown, field = 'resource'): void {
  if (typeof resource !== 'string' || resource.length === 0)
    throw new RedlockConfigError(
      field,
      `must be a non-empty string, got ${show(resource)}`,
    );
}
