import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../core/lock.js';
import type { CallShape } from './call-shape.js';

/**
 * One locked call in an async call chain. Frames link to the frame of the
 * enclosing locked call, so a nested call can see what its chain holds.
 */
export interface LockFrame {
  /** The `Redlock` that took the lock: chains never join across apps. */
  readonly owner: object;
  /** The lock this call acquired, or for a call that only joined, the lock it joined. */
  readonly lock: Lock;
  /** Resources this call acquired itself (empty for a call that only joined). */
  readonly resources: ReadonlySet<string>;
  /** How it holds them: a mutex, permits of a semaphore, or a side of a read/write lock. */
  readonly shape: CallShape;
  readonly parent: LockFrame | undefined;
  /** Nested calls currently running on this frame's lock. */
  joined: number;
  /** Set once this call's work is over: later calls in the chain acquire again. */
  closed: boolean;
  /** Resolves the owner's wait for its joined calls. */
  drained?: () => void;
}

const ALS_KEY = Symbol.for('nestjs-redlock:als');

/**
 * The one AsyncLocalStorage of the package, on `globalThis` so the CommonJS
 * and ESM copies of the package share it.
 */
export const lockContext: AsyncLocalStorage<LockFrame> = ((
  globalThis as Record<symbol, unknown>
)[ALS_KEY] ??=
  new AsyncLocalStorage<LockFrame>()) as AsyncLocalStorage<LockFrame>;

/** The lock of the innermost open locked call in this async chain (of `owner`, if given). */
export function currentLock(owner?: object): Lock | undefined {
  for (let f = lockContext.getStore(); f; f = f.parent)
    if (!f.closed && (owner === undefined || f.owner === owner)) return f.lock;
  return undefined;
}

/** For each resource, the open frame of `owner` in this chain that holds it. */
export function heldBy(
  owner: object,
  resources: readonly string[],
): Map<string, LockFrame> {
  const held = new Map<string, LockFrame>();
  for (let f = lockContext.getStore(); f; f = f.parent) {
    if (f.closed || f.owner !== owner) continue;
    for (const r of resources)
      if (!held.has(r) && f.resources.has(r)) held.set(r, f);
  }
  return held;
}
