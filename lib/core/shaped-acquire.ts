import type { AcquireOptions } from './config/options.js';
import type { RedlockContext } from './context.js';
import { PermitBook } from './permits/permit-book.js';
import { permitScripts } from './permits/permit-scripts.js';
import { rwScripts } from './rwlock/rw-scripts.js';
import { RwWaiters } from './rwlock/rw-waiters.js';
import { scriptedLockOperations } from './shapes/scripted-lock-ops.js';
import { ShapeBook } from './shapes/shape-book.js';
import type { Lock } from './lock.js';
import { acquire } from './operations/acquire.js';
import { acquireObserved, traceAcquire } from './operations/trace.js';
import { tryAcquire } from './operations/try-acquire.js';
import { acquirePermits, type PermitHost } from './permits/acquire-permits.js';
import { acquireRw, type RwHost } from './rwlock/acquire-rw.js';
import { MUTEX_SHAPE } from './shapes/shape-book.js';
import { rejected } from './util/rejected.js';

/** What `Redlock` holds for the lock shapes beyond the mutex. */
export type ShapesHost = PermitHost & RwHost;

/** The shapes' state of one `Redlock` instance, around its context. */
export function openShapes(ctx: RedlockContext): ShapesHost {
  const waiters = new RwWaiters();
  const rw = rwScripts(ctx.config.metaPrefix);
  const permits = permitScripts(ctx.config.metaPrefix);
  const book = new PermitBook(ctx.clock);
  return {
    ctx,
    book,
    shapes: new ShapeBook(),
    waiters,
    permitScripts: permits,
    // A permit's release passes it on or wakes a waiter through the PermitBook.
    permitOps: scriptedLockOperations(ctx, permits, () => undefined, {
      passOn: (lock) =>
        ctx.config.localHandoff > 0 &&
        book.passOn(lock, ctx.config.localHandoff),
      linger: (lock, releaseLater) =>
        ctx.config.localHandoff > 0 &&
        book.linger(
          lock,
          ctx.config.localHandoff,
          ctx.readyWaits,
          releaseLater,
        ),
    }),
    rwScripts: rw,
    rwOps: scriptedLockOperations(ctx, rw, (lock) =>
      waiters.wake(lock.resources),
    ),
  };
}

/**
 * Whether a call takes another path than the mutex's: it asks for a
 * shape, or this instance's callers use shapes (a mutex on one of their
 * resources is refused). One property read on the mutex's path otherwise.
 */
export function isShaped(
  host: ShapesHost,
  options: AcquireOptions | undefined,
): boolean {
  return (
    options?.permits !== undefined ||
    options?.mode !== undefined ||
    host.shapes.size !== 0
  );
}

/**
 * `acquire()` / `tryAcquire()` of a semaphore (`permits`), a read/write
 * lock (`mode`), or of a mutex while callers of this instance use shapes:
 * then a mutex on one of their resources is refused (`LockShapeError`).
 * `once`: `tryAcquire()`.
 */
export function shapedAcquire(
  host: ShapesHost,
  resources: string | string[],
  options: AcquireOptions | undefined,
  once: boolean,
): Promise<Lock | null> {
  const { ctx } = host;
  const kind = once ? 'tryAcquire' : 'acquire';
  const permits = options?.permits;
  const mode = options?.mode;
  let call: () => Promise<Lock | null>;
  if (mode !== undefined)
    call = () => acquireRw(host, resources, { ...options, mode }, once);
  else if (permits !== undefined)
    call = () => acquirePermits(host, resources, { ...options, permits }, once);
  else {
    try {
      host.shapes.check(namesOf(resources), MUTEX_SHAPE);
    } catch (error) {
      return rejected(error);
    }
    const op = once ? tryAcquire : acquire;
    if (!acquireObserved()) return op(ctx, resources, options);
    return traceAcquire(ctx, kind, resources, options, (trace) =>
      op(ctx, resources, options, trace),
    );
  }
  if (!acquireObserved()) return call();
  return traceAcquire(ctx, kind, resources, options, call);
}

/** The resource names of a call's argument, for a check before it is validated. */
function namesOf(resources: string | string[]): readonly string[] {
  if (typeof resources === 'string') return [resources];
  return Array.isArray(resources)
    ? resources.filter((r): r is string => typeof r === 'string')
    : [];
}
