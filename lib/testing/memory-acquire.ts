import { LockNotAcquiredError } from '../errors/lock-not-acquired.error.js';
import { LockShapeError } from '../errors/lock-shape.error.js';
import type { AcquireOptions } from '../core/config/options.js';
import type { RedlockConfig } from '../core/config/resolve.js';
import type { RedlockStats } from '../core/context.js';
import { Lock, type LockOperations } from '../core/lock.js';
import {
  resolveCall,
  type AcquireCall,
} from '../core/operations/acquire-call.js';
import { stopReason } from '../core/operations/stop.js';
import { permitResource } from '../core/permits/permit-slots.js';
import { checkShapeOptions } from '../core/shapes/shape-options.js';
import {
  MUTEX_SHAPE,
  shapeNameOf,
  type ShapeBook,
  type ShapeName,
} from '../core/shapes/shape-book.js';
import type { Clock } from '../core/util/clock.js';
import { NODE } from './in-memory-options.js';
import type { MemoryStore, Refusal } from './memory-store.js';
import { waitForRelease } from './memory-waits.js';
import type { Schedule } from './test-clock.js';

/** What the acquires of one `InMemoryRedlock` share. */
export interface MemoryHost {
  /** The lock manager its locks call back. */
  readonly ops: LockOperations;
  readonly config: RedlockConfig;
  readonly clock: Clock;
  readonly store: MemoryStore;
  /** The shape each resource is used with (a semaphore, a read/write lock). */
  readonly shapes: ShapeBook;
  readonly schedule: Schedule;
  readonly stats: RedlockStats;
  /** Whether `quit()` ran. */
  isClosed(): boolean;
}

/**
 * `acquire()` (`once` false) and `tryAcquire()` of the in-memory lock, in
 * the three shapes the real one has: a mutex; a semaphore (`permits`),
 * one free permit slot `<resource>#permit-<i>` of each resource, the
 * lowest; a read/write lock (`mode`), readers together or one writer, a
 * writer refused by readers keeping new readers out until it holds or
 * gives up. Waiters wait until a release or the holder's lease ends, up
 * to `waitTimeout`. A resource keeps one shape while it is used
 * (`LockShapeError`), as in one process of the real lock.
 */
export async function acquireInMemory(
  host: MemoryHost,
  resources: string | string[],
  options: AcquireOptions | undefined,
  once: boolean,
): Promise<Lock | null> {
  const call = resolveCall(host.config, resources, options);
  checkShapeOptions(options, call.fencing);
  if (once) await Promise.resolve();
  stop(host, call, 0);
  const shape = shapeNameOf(options);
  if (shape === MUTEX_SHAPE) {
    if (host.shapes.size > 0) host.shapes.check(call.resources, MUTEX_SHAPE);
    return rounds(host, call, options, once);
  }
  refuseHeldMutex(host, call, shape);
  host.shapes.enter(call.resources, shape);
  let lock: Lock | null = null;
  try {
    lock = await rounds(host, call, options, once);
    return lock;
  } finally {
    host.shapes.leave(call.resources, lock ?? undefined);
  }
}

async function rounds(
  host: MemoryHost,
  call: AcquireCall,
  options: AcquireOptions | undefined,
  once: boolean,
): Promise<Lock | null> {
  const { clock, store, stats } = host;
  const giveUpAt = clock.now() + call.timing.waitTimeout;
  // The writer's name for its intent on the keys.
  const owner = {};
  try {
    for (let attempts = 1; ; attempts++) {
      if (attempts > 1) stop(host, call, attempts - 1);
      const got = attempt(host, call, options, owner);
      if (got instanceof Lock) {
        // As the real lock: `acquire()`s are counted, not `tryAcquire()`s.
        if (!once) stats.acquired++;
        if (!once && attempts > 1) stats.waited++;
        return got;
      }
      if (once) return null;
      const remaining = giveUpAt - clock.now();
      const holderTtl = got.holderTtl;
      if (remaining <= 0)
        throw new LockNotAcquiredError(
          call.resources,
          attempts,
          'busy',
          [{ node: NODE, outcome: 'busy' }],
          holderTtl ?? call.timing.ttl,
        );
      stats.retries++;
      await waitForRelease(
        store,
        host.schedule,
        Math.min(remaining, holderTtl ?? Infinity),
        call.signal,
      );
    }
  } finally {
    store.dropIntent(call.keys, owner);
  }
}

/** One attempt, in the call's shape: the lock, or why it was refused. */
function attempt(
  host: MemoryHost,
  call: AcquireCall,
  options: AcquireOptions | undefined,
  owner: object,
): Lock | Refusal {
  const { store, ops } = host;
  const now = host.clock.now();
  if (options?.mode === 'read') return store.takeRead(ops, call, now);
  if (options?.mode === 'write') return store.takeWrite(ops, call, owner, now);
  if (options?.permits === undefined)
    return (
      store.take(ops, call, now) ?? {
        holderTtl: store.remaining(call.keys, now),
      }
    );
  return takePermits(host, call, options.permits, now);
}

/** The lowest free permit slot of each resource, all or nothing. */
function takePermits(
  host: MemoryHost,
  call: AcquireCall,
  permits: number,
  now: number,
): Lock | Refusal {
  const { store, config } = host;
  const names: string[] = [];
  // The whole call may go on once every full resource has a slot free.
  let wait = 0;
  for (const resource of call.resources) {
    const slots = Array.from({ length: permits }, (_, i) =>
      permitResource(resource, i),
    );
    const free = slots.find((slot) => store.free([config.keyOf(slot)], now));
    if (free !== undefined) names.push(free);
    else wait = Math.max(wait, store.remaining(slots.map(config.keyOf), now));
  }
  if (names.length < call.resources.length) return { holderTtl: wait };
  const slotCall = {
    ...call,
    resources: names,
    keys: names.map(config.keyOf),
    // Tokens rise over every permit holder of a resource.
    counters: call.keys,
  };
  return store.take(host.ops, slotCall, now)!;
}

/** Refuses a semaphore or read/write lock on a resource held as a mutex (mutexes are not in the `ShapeBook`). */
function refuseHeldMutex(
  host: MemoryHost,
  call: AcquireCall,
  shape: ShapeName,
): void {
  const now = host.clock.now();
  call.resources.forEach((resource, i) => {
    if (
      host.shapes.shapeOf(resource) === undefined &&
      host.store.holder(call.keys[i], now)
    )
      throw new LockShapeError(resource, shape, MUTEX_SHAPE);
  });
}

/** Throws why a call must stop now (aborted, or `quit()` ran), if it must. */
function stop(host: MemoryHost, call: AcquireCall, attempts: number): void {
  const reason = stopReason(
    { closed: host.isClosed() },
    call.resources,
    attempts,
    call.signal,
  );
  if (reason !== undefined) throw reason;
}
