import { LockShapeError } from '../../errors/lock-shape.error.js';
import {
  MUTEX_OR_WRITER_SHAPE,
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
