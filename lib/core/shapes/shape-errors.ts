import {
  LockNotAcquiredError,
  type LockFailureReason,
} from '../../errors/lock-not-acquired.error.js';
import { LockShapeError } from '../../errors/lock-shape.error.js';
import { lineOf } from '../contention/line.js';
import type { RedlockContext } from '../context.js';
import { votesOf, type Ballot } from '../nodes/poll.js';
import type { AcquireCall } from '../operations/acquire-call.js';
import {
  MUTEX_OR_WRITER_SHAPE,
  MUTEX_SHAPE,
  permitsShape,
  READ_WRITE_SHAPE,
  type ShapeName,
} from './shape-book.js';

/**
 * The error of an attempt that a node refused because the resource's key
 * holds another shape: a script's `{-3, mark, index}` reply, where `mark`
 * is the key's value when it is a shape's mark (`~permits:<n>`,
 * `~readers`), or `""` for a mutex's or a writer's value. `requested`: the
 * shape of the attempt (a read/write lock's when left out).
 */
export function shapeConflict(
  resources: readonly string[],
  reply: readonly unknown[],
  requested: ShapeName = READ_WRITE_SHAPE,
): LockShapeError {
  const mark = String(reply[1]);
  const resource = resources[Number(reply[2]) - 1] ?? resources[0];
  const current = mark.startsWith('~permits:')
    ? permitsShape(Number(mark.slice('~permits:'.length)))
    : mark === '~readers'
      ? READ_WRITE_SHAPE
      : MUTEX_OR_WRITER_SHAPE;
  return new LockShapeError(resource, requested, current, true);
}

/** What a semaphore's or read/write lock's last attempt told (see `gaveUp`). */
export interface ShapeAttempt {
  readonly reason?: LockFailureReason;
  readonly ballots: readonly Ballot[];
  readonly holderTtl?: number;
}

/**
 * The error of a semaphore or read/write acquire that gave up after
 * `attempts`, naming the resources asked for (not a permit slot); its
 * `retryAfter` is the lease a node reported, else the call's `ttl`.
 */
export function gaveUp(
  call: AcquireCall,
  attempts: number,
  last: ShapeAttempt | undefined,
): LockNotAcquiredError {
  return new LockNotAcquiredError(
    call.resources,
    attempts,
    last?.reason ?? 'busy',
    last ? votesOf(last.ballots) : [],
    last?.holderTtl ?? call.timing.ttl,
  );
}

/**
 * Refuses `shape` on a resource this process holds as a mutex (mutexes
 * are not in the `ShapeBook`: its hot path stays as it was).
 */
export function checkNoMutexHeld(
  ctx: RedlockContext,
  call: AcquireCall,
  shape: ShapeName,
): void {
  for (let i = 0; i < call.resources.length; i++) {
    const key = [call.keys[i]];
    if (
      ctx.contention.holderOf(lineOf(key, false))?.isHeld ||
      ctx.contention.holderOf(lineOf(key, true))?.isHeld
    )
      throw new LockShapeError(call.resources[i], shape, MUTEX_SHAPE);
  }
}
