import type {
  AcquireOptions,
  RunOptions,
  WatchdogOptions,
} from './config/options.js';
import type { ResolvedTiming } from './config/timing.js';
import type { RedlockStats } from './context.js';
import type { Lock, ReleaseResult } from './lock.js';
import type { RedlockHealth } from './nodes/health.js';
import type { RedlockNode } from './nodes/redlock-node.js';
import type {
  InspectionOf,
  InspectOptions,
} from './inspection/inspect-options.js';
import type { Clock } from './util/clock.js';

/**
 * One contract for the lock manager of a lock set: what `RedlockModule`,
 * `LockService`, `@Locked` and `LockInterceptor` use of it, and what a
 * `Lock` calls back. `Redlock` implements it on Redis nodes, and
 * `InMemoryRedlock` (`nestjs-redlock/testing`) in this process's memory, so
 * that the test double cannot drift from the real lock unnoticed: the
 * compiler checks both against it.
 *
 * Type a dependency with it to accept either one, e.g. the `REDLOCK` token
 * of an app that its unit tests run on `RedlockTestingModule`:
 *
 * ```ts
 * constructor(@InjectRedlock() private readonly redlock: LockManager) {}
 * ```
 *
 * @publicApi
 */
export interface LockManager {
  /**
   * Counters since the instance was created: locks `acquired` by
   * `acquire()`, how many of them `waited`, and the `retries` made while
   * waiting.
   */
  readonly stats: RedlockStats;
  /** Votes needed to hold a lock (1 for the in-memory lock). */
  readonly quorum: number;
  /** The monotonic clock validity is counted on. */
  readonly clock: Clock;
  /** Prefix of lock keys (see `RedlockOptions.keyPrefix`). */
  readonly keyPrefix: string;
  /** Prefix of the library's other keys and channels (see `RedlockOptions.metaPrefix`). */
  readonly metaPrefix: string;
  /** True once `quit()` was called: acquires are refused from then on. */
  readonly isClosed: boolean;

  /** The key of a resource (`keyPrefix` and the resource). */
  keyOf(resource: string): string;

  /**
   * Acquires a lock on every resource (all or nothing), waiting up to
   * `waitTimeout` while they are held. Rejects with `LockNotAcquiredError`
   * when the time is up, saying why (`busy`, `unreachable`, `closed`...).
   */
  acquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock>;

  /**
   * One attempt, no waiting: resolves `null` when the resources are held by
   * someone else; rejects with `LockNotAcquiredError` when the nodes could
   * not answer (an outage never looks like "busy") or once `quit()` ran.
   */
  tryAcquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock | null>;

  /**
   * Acquires, runs `fn(lock)` while a watchdog keeps the lock alive, then
   * releases it, also when `fn` throws (its error propagates unchanged). A
   * lock lost meanwhile rejects with `LockLostError` carrying `fn`'s
   * outcome, unless `onLockLost` is `'ignore'`.
   */
  using<T>(
    resources: string | string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T>;

  /** As `using()`, for a lock already acquired: runs `fn` under a watchdog, then releases it. */
  hold<T>(
    lock: Lock,
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T>;

  /**
   * Keeps a lock acquired by hand alive, as `using()` does, until the
   * returned function is called, the lock is released or lost, or
   * `maxHold` is reached. On loss, `lock.signal` aborts and `onLost` is
   * called once.
   */
  watch(lock: Lock, options?: WatchdogOptions): () => void;

  /**
   * Resolves `true` once a quorum of nodes is connected, `false` after
   * `timeoutMs` or once `quit()` ran; never rejects.
   */
  ready(timeoutMs?: number): Promise<boolean>;

  /**
   * PINGs every node: whether a quorum answered within `timeoutMs`, with
   * each node's latency or error. Never rejects.
   */
  health(timeoutMs?: number): Promise<RedlockHealth>;

  /**
   * What the nodes hold for `resource`, per node (never a lock's value):
   * a mutex's key, with `{ permits }` a semaphore's slots, with `{ mode }`
   * a read/write lock's writer or readers. Writes nothing.
   */
  inspect<O extends number | InspectOptions | undefined = undefined>(
    resource: string,
    options?: O,
  ): Promise<InspectionOf<O>>;

  /**
   * Shuts the instance down: acquires are refused, waiters give up, work
   * under a lock gets `shutdownTimeout` to finish, every lock still held is
   * released, then connections the library opened are closed. Calling it
   * again returns the same promise.
   */
  quit(): Promise<void>;

  /** @internal The nodes, in configuration order (none for the in-memory lock). */
  readonly nodes: readonly RedlockNode[];

  /** @internal One call's timing: the instance's, overridden by the call's (checks them). */
  resolveTiming(options?: AcquireOptions): ResolvedTiming;

  /** @internal Called by `Lock.extend`. */
  extendLock(lock: Lock, ttl: number | undefined): Promise<void>;

  /** @internal Called by `Lock.release`. */
  releaseLock(lock: Lock): Promise<ReleaseResult>;

  /** @internal Called by `Lock.letExpire`. */
  leaveLock(lock: Lock, ms: number): Promise<ReleaseResult>;
}
