import type { AcquireOptions } from '../config/options.js';
import type { Lock } from '../lock.js';
import { acquire } from '../operations/acquire.js';
import { acquireObserved, traceAcquire } from '../operations/trace.js';
import { tryAcquire } from '../operations/try-acquire.js';
import { rejected } from '../util/rejected.js';
import { acquirePermits, type PermitHost } from './acquire-permits.js';
import { MUTEX_SHAPE } from '../shapes/shape-book.js';

/**
 * `acquire()` / `tryAcquire()` of a semaphore (`permits`), or of a mutex
 * while callers of this instance use semaphores: a mutex on one of their
 * resources is refused (`LockShapeError`). `once`: `tryAcquire()`.
 */
export function shapedAcquire(
  host: PermitHost,
  resources: string | string[],
  options: AcquireOptions | undefined,
  once: boolean,
): Promise<Lock | null> {
  const { ctx } = host;
  const permits = options?.permits;
  if (permits === undefined) {
    try {
      host.shapes.check(namesOf(resources), MUTEX_SHAPE);
    } catch (error) {
      return rejected(error);
    }
    const op = once ? tryAcquire : acquire;
    if (!acquireObserved()) return op(ctx, resources, options);
    return traceAcquire(
      ctx,
      once ? 'tryAcquire' : 'acquire',
      resources,
      options,
      (trace) => op(ctx, resources, options, trace),
    );
  }
  const call = () =>
    acquirePermits(host, resources, { ...options, permits }, once);
  if (!acquireObserved()) return call();
  return traceAcquire(
    ctx,
    once ? 'tryAcquire' : 'acquire',
    resources,
    options,
    call,
  );
}

/** The resource names of a call's argument, for a check before it is validated. */
function namesOf(resources: string | string[]): readonly string[] {
  if (typeof resources === 'string') return [resources];
  return Array.isArray(resources)
    ? resources.filter((r): r is string => typeof r === 'string')
    : [];
}
