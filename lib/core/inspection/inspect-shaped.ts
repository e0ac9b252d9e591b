import type { RedlockContext } from '../context.js';
import { checkResource, inspect } from '../operations/inspect.js';
import { rejected } from '../util/rejected.js';
import {
  inspectOptions,
  type InspectionOf,
  type InspectOptions,
} from './inspect-options.js';
import { inspectReadWrite } from './inspect-rw.js';
import { inspectSemaphore } from './inspect-semaphore.js';

/**
 * `Redlock.inspect`: a mutex (a timeout or no shape in the options), a
 * semaphore (`permits`) or a read/write lock (`mode`). Rejects with
 * `RedlockConfigError` naming a bad argument, before any Redis call.
 */
export function inspectShaped<O extends number | InspectOptions | undefined>(
  ctx: RedlockContext,
  resource: string,
  options: O | undefined,
): Promise<InspectionOf<O>> {
  return inspectAny(ctx, resource, options) as Promise<InspectionOf<O>>;
}

function inspectAny(
  ctx: RedlockContext,
  resource: string,
  options: number | InspectOptions | undefined,
): Promise<InspectionOf<InspectOptions>> {
  try {
    checkResource(resource);
    const { timeoutMs, permits, mode } = inspectOptions(options);
    if (permits !== undefined)
      return inspectSemaphore(ctx, resource, permits, timeoutMs);
    if (mode !== undefined) return inspectReadWrite(ctx, resource, timeoutMs);
    return inspect(ctx, resource, timeoutMs);
  } catch (error) {
    return rejected(error);
  }
}
