import type { LockMode, RunOptions } from '../core/config/options.js';
import { shapeNameOf } from '../core/shapes/shape-book.js';
import { LockShapeError } from '../errors/lock-shape.error.js';
import { LockUpgradeError } from '../errors/lock-upgrade.error.js';
import type { RedlockError } from '../errors/redlock.error.js';

/**
 * How a locked call holds its resources: a mutex (neither field), a
 * semaphore's permit (`permits`), or one side of a read/write lock
 * (`mode`), as its options ask.
 */
export interface CallShape {
  readonly permits?: number;
  readonly mode?: LockMode;
}

const MUTEX: CallShape = {};

/** The shape a call's options ask for. */
export function callShape(options: RunOptions | undefined): CallShape {
  const permits = options?.permits;
  const mode = options?.mode;
  if (permits === undefined && mode === undefined) return MUTEX;
  return { permits, mode };
}

/**
 * Why a nested call asking for `requested` cannot join an enclosing call
 * of its chain that holds `resource` as `held`, or `undefined` when it
 * joins. It joins the same shape (a mutex in a mutex, a permit of the
 * same semaphore, a read in a read, a write in a write) and a read in a
 * write (the write excludes everyone else already). A write in a read
 * would wait for its own read: `LockUpgradeError`. Any other mix is the
 * core's `LockShapeError`, which a call outside the chain gets as well.
 */
export function joinRefusal(
  resource: string,
  held: CallShape,
  requested: CallShape,
  caller: string,
): RedlockError | undefined {
  if (held.mode !== undefined && requested.mode !== undefined)
    return held.mode === 'read' && requested.mode === 'write'
      ? new LockUpgradeError(resource, caller)
      : undefined;
  if (held.mode === requested.mode && held.permits === requested.permits)
    return undefined;
  return new LockShapeError(
    resource,
    shapeNameOf(requested),
    shapeNameOf(held),
  );
}
