import { LockExtendError } from '../errors/lock-extend.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { channels, valueHash, type LockShape } from './events/channels.js';
import type { ReleaseResult } from './release-result.js';
import type { Clock } from './util/clock.js';

export type { ReleaseResult } from './release-result.js';

/**
 * The operations a lock needs from the algorithm (every `LockManager`:
 * `Redlock`, `InMemoryRedlock`). Not exported by the entry points, but
 * not stripped from the published typings either: other typings name it.
 */
export interface LockOperations {
  readonly clock: Clock;
  extendLock(lock: Lock, ttl: number | undefined): Promise<void>;
  releaseLock(lock: Lock): Promise<ReleaseResult>;
  leaveLock(lock: Lock, ms: number): Promise<ReleaseResult>;
}

/**
 * A held lock. Its keys hold `value` on at least a quorum of nodes until
 * `validUntil`, unless extended.
 *
 * @publicApi
 */
export class Lock {
  private released?: Promise<ReleaseResult>;
  // Created on first use: most locks are released without anyone reading
  // their signal, and an AbortController is among the costlier objects of
  // an uncontended acquire.
  private controller?: AbortController;
  private lost?: LockLostError;
  private lostHandlers?: (() => void)[];
  /** @internal Whether the acquire had to wait for the resources (for `Redlock.stats`). */
  waited = false;
  /**
   * @internal Whether the nodes made this lock's acquire wait (refused it,
   * or it got its key through a queue place): another process competes for
   * it. A lease passed within the process keeps the flag.
   */
  waitedInRedis = false;
  /**
   * @internal When it was granted (clock ms), noted only while someone
   * listens to the lock events (for their hold times); `NaN` otherwise.
   */
  acquiredAt = NaN;
  /**
   * @internal Called once the release settled (a semaphore's permit
   * slot: wakes a waiter of this process). Release never rejects.
   */
  afterRelease?: () => void;
  /**
   * @internal What the lock is besides a mutex (a semaphore's permit, a
   * side of a read/write lock), for its events; `undefined` for a mutex.
   */
  shape?: LockShape;

  /**
   * The fencing token of each resource (decimal strings), when the lock was
   * acquired with `fencing: true`; `undefined` otherwise. Each token is
   * greater than that of every earlier acquire of its resource: pass it to
   * the store the lock protects, which refuses writes with an older one
   * (see `FencedStore` and docs/fencing.md).
   */
  readonly fencingTokens?: ReadonlyMap<string, string>;

  /** @internal Created by `Redlock`; users get locks from `acquire`. */
  constructor(
    private readonly ops: LockOperations,
    /** The resources held (sorted, without duplicates, not prefixed). */
    readonly resources: readonly string[],
    /** The Redis keys held (prefixed). */
    readonly keys: readonly string[],
    /** The random value that signs this lock on every node. */
    readonly value: string,
    /** The lease, in ms, of the last acquire or extend. */
    public ttl: number,
    /** @internal Monotonic deadline of validity (the clock's `now()` units). */
    public deadline: number,
    /** @internal This lock's name in the nodes' wait queues, if it waited in them. */
    readonly queueName?: string,
  ) {}

  /**
   * The fencing token of a single-resource lock acquired with `fencing: true`.
   * `undefined` without fencing, and for a lock on several resources, whose
   * tokens (one per resource) are in {@link fencingTokens}.
   */
  get fencingToken(): string | undefined {
    return this.resources.length === 1
      ? this.fencingTokens?.get(this.resources[0])
      : undefined;
  }

  /** Epoch ms until which the lock is valid (lease minus elapsed time and clock drift). */
  get validUntil(): number {
    return this.ops.clock.toEpoch(this.deadline);
  }

  /** Milliseconds of validity left; 0 once it ran out, was lost or released. */
  remaining(): number {
    if (this.released || this.lost) return 0;
    return Math.max(0, this.deadline - this.ops.clock.now());
  }

  /** True while the lock is neither released, lost, nor past its validity. */
  get isHeld(): boolean {
    return this.remaining() > 0;
  }

  /** True once `release()` was called. */
  get isReleased(): boolean {
    return this.released !== undefined;
  }

  /**
   * Aborts, with a {@link LockLostError} as its reason, when the lock is
   * found lost: a failed `extend()`, or, while a watchdog keeps it (`run`,
   * `@Locked`, `watch()`), a failed extension, validity run out, or
   * `maxHold` reached. A lock nobody extends does not abort on its own when
   * its validity runs out: check {@link isHeld} before writes. Work
   * protected by the lock should stop before committing a write once it aborts.
   */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    // Lost before anyone asked for the signal (abort() again is a no-op).
    if (this.lost) this.controller.abort(this.lost);
    return this.controller.signal;
  }

  /**
   * Resets the lease to `ttl` (default: the lease of the last acquire or extend) on
   * every node where our value still stands. Resolves with this lock, its
   * `validUntil` recomputed; rejects with `LockExtendError` when fewer than a
   * quorum extended within the new validity, when the lock's validity had
   * already run out, or when it was released. After a rejection the lock is
   * lost (its signal aborts). An extension never re-creates an expired key
   * (with `recreateOnExtend`, a key a node lost is put back, uncounted,
   * once a quorum of the others extended it).
   */
  async extend(ttl?: number): Promise<this> {
    if (this.released)
      throw new LockExtendError(this.resources, 'the lock was released');
    if (this.lost)
      throw new LockExtendError(
        this.resources,
        `the lock was already lost (${this.lost.message})`,
      );
    if (this.ops.clock.now() >= this.deadline) {
      const reason =
        'its validity ran out before the extension (was the process paused?)';
      this.markLost(reason);
      throw new LockExtendError(this.resources, reason);
    }
    await this.ops.extendLock(this, ttl);
    return this;
  }

  /**
   * Deletes our keys on every node (compare-and-delete: never another
   * holder's key). Never rejects; releasing twice returns the first result.
   */
  release(): Promise<ReleaseResult> {
    if (this.released) return this.released;
    this.released = this.ops.releaseLock(this);
    if (this.afterRelease) void this.released.then(this.afterRelease);
    return this.released;
  }

  /**
   * @internal Lets the lock go without deleting its keys: their lease is
   * cut to `ms` and they expire by themselves (`minHold`). Counts as the
   * release: `release()` afterwards returns the same result.
   */
  letExpire(ms: number): Promise<ReleaseResult> {
    if (this.released) return this.released;
    this.released = this.ops.leaveLock(this, ms);
    if (this.afterRelease) void this.released.then(this.afterRelease);
    return this.released;
  }

  /** @internal Calls `handler` once if the lock is lost (without creating the signal). */
  onLost(handler: () => void): void {
    if (this.lost) handler();
    else (this.lostHandlers ??= []).push(handler);
  }

  /** @internal Whether the lock was lost (as `signal.aborted`, without creating the signal). */
  get isLost(): boolean {
    return this.lost !== undefined;
  }

  /** @internal How long it has been held, in ms, when its grant time was noted (see `acquiredAt`). */
  heldFor(): number | undefined {
    return Number.isNaN(this.acquiredAt)
      ? undefined
      : this.ops.clock.now() - this.acquiredAt;
  }

  /** @internal Marks the lock lost and aborts its signal (once). */
  markLost(reason: string): LockLostError {
    if (!this.lost) {
      this.lost = new LockLostError(this.resources, reason);
      if (channels.lost.hasSubscribers)
        channels.lost.publish({
          resources: this.resources,
          valueHash: valueHash(this.value),
          reason,
          holdMs: this.heldFor(),
          ...this.shape,
        });
      this.controller?.abort(this.lost);
      for (const handler of this.lostHandlers ?? []) handler();
      this.lostHandlers = undefined;
    }
    return this.lost;
  }
}

/** @internal What a new `Lock` is made of, beyond its instance. */
export interface LockInit {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly value: string;
  readonly ttl: number;
  /** Monotonic deadline of validity. */
  readonly deadline: number;
  /** Its name in the nodes' wait queues, if it waited in them. */
  readonly queueName?: string;
  /** The acquire had to wait (in this process or on the nodes). */
  readonly waited?: boolean;
  /** The nodes made the acquire wait: another process competes for it. */
  readonly waitedInRedis?: boolean;
  /** Its shape, when not a mutex (see `Lock.shape`). */
  readonly shape?: LockShape;
}

/** @internal Every `Lock` of an instance is made here; `ops`: the instance's. */
export function createLock(ops: LockOperations, init: LockInit): Lock {
  const lock = new Lock(
    ops,
    init.resources,
    init.keys,
    init.value,
    init.ttl,
    init.deadline,
    init.queueName,
  );
  if (init.waited) lock.waited = true;
  if (init.waitedInRedis) lock.waitedInRedis = true;
  if (init.shape) lock.shape = init.shape;
  if (channels.release.hasSubscribers || channels.lost.hasSubscribers)
    lock.acquiredAt = ops.clock.now();
  return lock;
}
