import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import type { AcquireOptions } from '../config/options.js';

/**
 * Refuses what a read/write lock (`mode`) cannot take: `permits` (a
 * resource is a semaphore or a read/write lock) and fencing (read/write
 * locks have no tokens). `fencing`: the call's, resolved with the
 * instance's default. The real lock and the in-memory one check alike.
 */
export function checkShapeOptions(
  options: AcquireOptions | undefined,
  fencing: boolean,
): void {
  if (options?.mode === undefined) return;
  if (options.permits !== undefined)
    throw new RedlockConfigError(
      'options.permits',
      `cannot be used with options.mode: a resource is a semaphore or a read/write lock, got permits ${options.permits} and mode '${options.mode}'`,
    );
  if (fencing)
    throw new RedlockConfigError(
      'options.fencing',
      `cannot be used with options.mode ('${options.mode}'): read/write locks have no fencing tokens; fence the writes with a mutex`,
    );
}
