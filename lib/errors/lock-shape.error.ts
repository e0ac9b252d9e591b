import { RedlockError } from './redlock.error.js';

/**
 * A resource was asked for with another shape than the one it is held or
 * acquired with, in this process or (as a node reports) in another: a
 * mutex, a semaphore or a read/write lock, or semaphores with different
 * `permits`. Mixing them would break the bound each caller
 * relies on, so the later call is refused before any Redis call. Use one
 * shape per resource everywhere (a constant for its `permits` helps).
 *
 * @publicApi
 */
export class LockShapeError extends RedlockError {
  constructor(
    /** The resource asked for (not prefixed). */
    readonly resource: string,
    /** The shape this call asked for: `mutex`, `<n> permits` or `read/write`. */
    readonly requested: string,
    /** The shape the resource is held or acquired with, named alike. */
    readonly current: string,
    /** True when a Redis node reported it (another process holds it so), false when this process does. */
    readonly elsewhere = false,
  ) {
    super(
      `Cannot lock "${resource}" as ${describe(requested)}: it is held or acquired as ${describe(current)} ${elsewhere ? 'by another process' : 'in this process'}; use one shape (and one permits count) per resource`,
    );
  }
}

function describe(shape: string): string {
  if (shape === 'mutex') return 'a mutex';
  if (shape === 'mutex or writer')
    return "a mutex or a read/write lock's writer";
  if (shape === 'read/write') return 'a read/write lock';
  return `a semaphore of ${shape}`;
}
