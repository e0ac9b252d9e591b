import { checkWatchdogOptions } from './config/call-options.js';
import type {
  AcquireOptions,
  RedlockOptions,
  RunOptions,
  WatchdogOptions,
} from './config/options.js';
import { callTiming } from './config/resolve.js';
import type { ResolvedTiming } from './config/timing.js';
import type { RedlockContext, RedlockStats } from './context.js';
import { channels } from './events/channels.js';
import {
  acquireObserved,
  traceAcquire,
  traceExtend,
  traceRelease,
} from './operations/trace.js';
import type { Contention } from './contention/contention.js';
import type { Lock, ReleaseResult } from './lock.js';
import type { LockManager } from './lock-manager.js';
import type { RedlockHealth } from './nodes/health.js';
import type { RedlockNode } from './nodes/redlock-node.js';
import type { NodeStanding } from './nodes/node-standing.js';
import { acquire } from './operations/acquire.js';
import { extendLock } from './operations/extend.js';
import { hold } from './operations/hold.js';
import type {
  InspectionOf,
  InspectOptions,
} from './inspection/inspect-options.js';
import { inspectShaped } from './inspection/inspect-shaped.js';
import { health, openContext, quit, ready } from './lifecycle/lifecycle.js';
import { leaveLock } from './operations/leave.js';
import { releaseLock } from './operations/release.js';
import { tryAcquire } from './operations/try-acquire.js';
import { extendAll } from './shapes/extend-all.js';
import {
  isShaped,
  openShapes,
  shapedAcquire,
  type ShapesHost,
} from './shaped-acquire.js';
import type { Clock } from './util/clock.js';
import type { KeepAlive } from './watchdog/keep-alive.js';

/**
 * The Redlock algorithm over N independent Redis masters, free of any
 * framework: acquire on all nodes at once, held with a quorum within the
 * lease minus elapsed time and clock drift; release and extend by value.
 *
 * @publicApi
 */
export class Redlock implements LockManager {
  /** @internal What every operation of this instance shares; they live in `operations/`. */
  private readonly ctx: RedlockContext;

  /** @internal The semaphores and read/write locks of this instance's callers (`permits`, `mode`). */
  private readonly shapes: ShapesHost;

  constructor(options: RedlockOptions) {
    this.ctx = openContext(options, this);
    this.shapes = openShapes(this.ctx);
  }

  /** @internal The nodes, in configuration order. */
  get nodes(): readonly RedlockNode[] {
    return this.ctx.nodes;
  }

  /**
   * Counters since this instance was created (for metrics and dashboards):
   * locks `acquired` by `acquire()`, how many of them `waited` (in this
   * process's local queue or in Redis), and the `retries` sent to Redis
   * while waiting.
   */
  get stats(): RedlockStats {
    return this.ctx.stats;
  }

  /** Votes needed to hold a lock. */
  get quorum(): number {
    return this.ctx.quorum;
  }

  /** The monotonic clock validity is counted on. */
  get clock(): Clock {
    return this.ctx.clock;
  }

  /** Prefix of lock keys (see `RedlockOptions.keyPrefix`). */
  get keyPrefix(): string {
    return this.ctx.config.keyPrefix;
  }

  /** Prefix of the library's other keys and channels (see `RedlockOptions.metaPrefix`). */
  get metaPrefix(): string {
    return this.ctx.config.metaPrefix;
  }

  /** @internal Callers competing for the same resources: queues, handoffs, release messages. */
  get contention(): Contention {
    return this.ctx.contention;
  }

  /** @internal The batched watchdog of every lock `using()` holds. */
  get keepAlive(): KeepAlive {
    return this.ctx.keepAlive;
  }

  /** @internal Which nodes' grants count, after restarts and clock trouble. */
  get standing(): NodeStanding {
    return this.ctx.standing;
  }

  /** True once `quit()` was called: acquires are refused from then on. */
  get isClosed(): boolean {
    return this.ctx.closed;
  }

  /** @internal Resolves timing for one call: the instance's, overridden by the call's. */
  resolveTiming(options?: AcquireOptions): ResolvedTiming {
    return callTiming(this.ctx.config, options);
  }

  /** The Redis key of a resource. */
  keyOf(resource: string): string {
    return this.ctx.config.keyOf(resource);
  }

  /**
   * Acquires a lock on every resource (all or nothing), waiting up to
   * `waitTimeout` while they are held. Rejects with `LockNotAcquiredError`
   * when the time is up, saying whether the resources were busy or the quorum
   * unreachable; a failed acquire leaves no key behind.
   */
  acquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock> {
    if (isShaped(this.shapes, options))
      return shapedAcquire(
        this.shapes,
        resources,
        options,
        false,
      ) as Promise<Lock>;
    if (!acquireObserved()) return acquire(this.ctx, resources, options);
    return traceAcquire(this.ctx, 'acquire', resources, options, (trace) =>
      acquire(this.ctx, resources, options, trace),
    );
  }

  /**
   * One attempt, no waiting (a second one when callers trying at the same
   * moment split the nodes, see `waitTimeout`). Resolves `null` when the resources are held by
   * someone else; rejects with `LockNotAcquiredError` when fewer than a quorum
   * of nodes answered, or they answered too late (an infrastructure failure
   * must not look like "busy"), and with reason `closed` once `quit()` ran
   * (a lock granted while it ran is taken back).
   */
  tryAcquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock | null> {
    if (isShaped(this.shapes, options))
      return shapedAcquire(this.shapes, resources, options, true);
    if (!acquireObserved()) return tryAcquire(this.ctx, resources, options);
    return traceAcquire(this.ctx, 'tryAcquire', resources, options, (trace) =>
      tryAcquire(this.ctx, resources, options, trace),
    );
  }

  /**
   * Acquires, runs `fn(lock)` while the watchdog keeps the lock alive,
   * then releases it, also when `fn` throws (its error propagates unchanged).
   * If the lock was lost meanwhile, rejects with `LockLostError` carrying
   * `fn`'s outcome, unless `onLockLost` is `'ignore'`.
   */
  async using<T>(
    resources: string | string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    // The acquire checks the options (all of them, before anything is
    // acquired), so the hold does not check them again.
    const lock = await this.acquire(resources, options);
    return hold(this.ctx, lock, fn, options, true);
  }

  /** Runs `fn` under an acquired lock with a watchdog, then releases it (see {@link using}). */
  hold<T>(
    lock: Lock,
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    return hold(this.ctx, lock, fn, options);
  }

  /**
   * Keeps a lock you acquired yourself alive, as `using()` does: extended
   * every third of its lease (with every other watched lock of this
   * instance, in one pipeline per node) until the returned function is
   * called, the lock is released or lost, or `maxHold` is reached. On loss,
   * `lock.signal` aborts and `onLost` is called once.
   */
  watch(lock: Lock, options?: WatchdogOptions): () => void {
    checkWatchdogOptions(options);
    return this.ctx.keepAlive.watch(lock, options);
  }

  /**
   * Resolves `true` once a quorum of nodes is connected, or `false` after
   * `timeoutMs` (it never rejects: nodes may come up later, and locks work
   * as soon as a quorum answers). Until then, an acquire would spend its
   * node timeout on connecting, and a single attempt (`tryAcquire`) right
   * after start-up could fail as `unreachable`. Clients the library
   * created and has not connected yet (`lazyConnect`) start connecting
   * here. `RedlockModule` awaits it while the application initialises.
   * `quit()` ends a pending wait with `false`.
   */
  ready(timeoutMs = 5000): Promise<boolean> {
    return ready(this.ctx, timeoutMs);
  }

  /**
   * PINGs every node and reports whether a quorum answered within
   * `timeoutMs` (default `HEALTH_TIMEOUT_MS`, 1 s), with each node's
   * latency or error: for readiness probes (see docs/observability.md,
   * "Health checks"). Never rejects; a frozen node costs the timeout. After
   * `quit()`, every node is reported down (`closed`), also borrowed clients
   * that are still open.
   */
  health(timeoutMs?: number): Promise<RedlockHealth> {
    return health(this.ctx, timeoutMs);
  }

  /**
   * What the nodes hold for `resource`, for an operator: per node whether
   * the key exists, its remaining lease, whether this instance holds it
   * (never the value of a lock, this instance's or another's), how many
   * wait in its queue, and the last fencing token. With `{ permits }`, each
   * permit slot of the semaphore so (`SemaphoreInspection`); with
   * `{ mode }`, the writer or the readers of a read/write lock with their
   * leases, and a waiting writer (`ReadWriteInspection`). Writes nothing;
   * waits up to `timeoutMs` (a number, or in the options; default 1 s).
   */
  inspect<O extends number | InspectOptions | undefined = undefined>(
    resource: string,
    options?: O,
  ): Promise<InspectionOf<O>> {
    return inspectShaped(this.ctx, resource, options);
  }

  /**
   * Shuts the instance down: new acquires are refused and waiting ones
   * give up (attempts in flight take back what they were granted); work
   * running under a lock (`using()`, `hold()`) gets `shutdownTimeout` to
   * finish, then its lock's signal aborts; every lock still held is
   * released on the nodes (waiters of other processes get it at once).
   * Then the clients the library created are closed (borrowed clients are
   * left open), with the release listener's subscribers. Resolves once
   * their sockets are closed: nothing of this instance keeps the process
   * alive after it (a node that is down is not waited for; one that does
   * not answer QUIT has its connection dropped after 1 s). Calling it again
   * returns the same promise.
   */
  quit(): Promise<void> {
    return quit(this.ctx);
  }

  /** @internal Called by `Lock.extend`. */
  extendLock(lock: Lock, ttl: number | undefined): Promise<void> {
    if (!channels.extend.hasSubscribers) return extendLock(this.ctx, lock, ttl);
    return traceExtend(lock, ttl, () => extendLock(this.ctx, lock, ttl));
  }

  /** @internal Called by `Lock.letExpire`. */
  leaveLock(lock: Lock, ms: number): Promise<ReleaseResult> {
    return leaveLock(this.ctx, lock, ms);
  }

  /** @internal Called by `Lock.release`. */
  releaseLock(lock: Lock): Promise<ReleaseResult> {
    if (!channels.release.hasSubscribers) return releaseLock(this.ctx, lock);
    return traceRelease(lock, () => releaseLock(this.ctx, lock));
  }

  /** @internal The watchdog's batched extension (see `extendMany`). */
  extendMany(locks: readonly Lock[]): Promise<void> {
    return extendAll(this.ctx, locks);
  }
}
