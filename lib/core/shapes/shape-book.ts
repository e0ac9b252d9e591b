import { LockShapeError } from '../../errors/lock-shape.error.js';
import type { Lock } from '../lock.js';

/** A lock's shape, as errors name it: `mutex`, `<n> permits` or `read/write`. */
export type ShapeName = string;

/** The shape name of a semaphore of `permits`. */
export function permitsShape(permits: number): ShapeName {
  return `${permits} permits`;
}

/** The shape name of a read/write lock. */
export const READ_WRITE_SHAPE: ShapeName = 'read/write';

/** The shape name of a mutex. */
export const MUTEX_SHAPE: ShapeName = 'mutex';

/** The shape a call's options ask for (`mode`, `permits`, or neither: a mutex). */
export function shapeNameOf(
  options: { readonly permits?: number; readonly mode?: unknown } | undefined,
): ShapeName {
  if (options?.mode !== undefined) return READ_WRITE_SHAPE;
  return options?.permits === undefined
    ? MUTEX_SHAPE
    : permitsShape(options.permits);
}

/** What a node reports when a resource's key holds a lock value: a mutex's, or a read/write lock's writer's. */
export const MUTEX_OR_WRITER_SHAPE: ShapeName = 'mutex or writer';

/** One resource used with a shape other than the mutex in this process. */
interface InUse {
  readonly shape: ShapeName;
  /** Acquires of it under way in this process. */
  acquiring: number;
  /** Locks of this process that hold it (until released or expired). */
  readonly held: Set<Lock>;
}

/**
 * The shape each resource is used with in this process, for the resources
 * used as semaphores or read/write locks (a mutex is the default and is not
 * recorded: its hot path stays as it was). A call of another shape on a
 * resource in use is refused with `LockShapeError`: mixing a mutex, a
 * semaphore and a read/write lock on one resource, or two permit counts,
 * would break the bound each caller relies on.
 */
export class ShapeBook {
  private readonly inUse = new Map<string, InUse>();

  /** Resources in use with a shape now (a mutex acquire checks only when not 0). */
  get size(): number {
    return this.inUse.size;
  }

  /** The shape `resource` is used with in this process, unless a mutex or unused. */
  shapeOf(resource: string): ShapeName | undefined {
    return this.current(resource)?.shape;
  }

  /** Refuses `shape` (a mutex too) on a resource in use with another. */
  check(resources: readonly string[], shape: ShapeName): void {
    for (const resource of resources) {
      const entry = this.current(resource);
      if (entry && entry.shape !== shape)
        throw new LockShapeError(resource, shape, entry.shape);
    }
  }

  /**
   * Starts an acquire of `shape` on each resource (refused, for all of
   * them, when one is in use with another). Pair with {@link leave}.
   */
  enter(resources: readonly string[], shape: ShapeName): void {
    this.check(resources, shape);
    for (const resource of resources) {
      let entry = this.inUse.get(resource);
      if (!entry) {
        entry = { shape, acquiring: 0, held: new Set() };
        this.inUse.set(resource, entry);
      }
      entry.acquiring++;
    }
  }

  /** Ends an acquire started with {@link enter}; `lock`: what it got, if it did. */
  leave(resources: readonly string[], lock?: Lock): void {
    for (const resource of resources) {
      const entry = this.inUse.get(resource);
      if (!entry) continue;
      entry.acquiring--;
      if (lock) entry.held.add(lock);
      this.current(resource);
    }
  }

  /** The entry of `resource` while in use (acquiring, or a lock still held). */
  private current(resource: string): InUse | undefined {
    const entry = this.inUse.get(resource);
    if (!entry) return undefined;
    if (entry.acquiring > 0) return entry;
    for (const lock of entry.held) if (!lock.isHeld) entry.held.delete(lock);
    if (entry.held.size > 0) return entry;
    this.inUse.delete(resource);
    return undefined;
  }
}
