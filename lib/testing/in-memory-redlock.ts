import { LockExtendError } from '../errors/lock-extend.error.js';
import { checkWatchdogOptions } from '../core/config/call-options.js';
import type {
  AcquireOptions,
  RunOptions,
  WatchdogOptions,
} from '../core/config/options.js';
import {
  callTiming,
  resolveRedlockConfig,
  type RedlockConfig,
} from '../core/config/resolve.js';
import type { ResolvedTiming } from '../core/config/timing.js';
import type { RedlockStats } from '../core/context.js';
import type { Lock, ReleaseResult } from '../core/lock.js';
import type { LockManager } from '../core/lock-manager.js';
import type { RedlockHealth } from '../core/nodes/health.js';
import type {
  InspectionOf,
  InspectOptions,
} from '../core/inspection/inspect-options.js';
import { hold, type HoldContext } from '../core/operations/hold.js';
import { ShapeBook } from '../core/shapes/shape-book.js';
import { monotonicClock, type Clock } from '../core/util/clock.js';
import { rejected } from '../core/util/rejected.js';
import { settledWithin } from '../core/util/timeout.js';
import { NODE, type InMemoryRedlockOptions } from './in-memory-options.js';
import { acquireInMemory, type MemoryHost } from './memory-acquire.js';
import {
  holdersIn,
  inspectMemory,
  type MemoryInspected,
} from './memory-inspect.js';
import { MemoryStore } from './memory-store.js';
import { keepAlive } from './memory-waits.js';
import { scheduler, type Schedule } from './test-clock.js';

/**
 * The lock of `RedlockTestingModule`: the same contract as `Redlock`
 * (`LockManager`, checked by the compiler; the same `Lock`, errors,
 * options and their validation), kept in this
 * process's memory instead of on Redis nodes, for unit tests of services
 * that use `@Locked` and `LockService`. Leases expire on its clock, waiters
 * wait up to `waitTimeout` (woken by releases), multi-resource locks are
 * all or nothing, fencing tokens rise per resource, the watchdog of
 * `run()` / `@Locked` extends leases, and `loseLock()` makes a held lock
 * lost, as a failed extension would.
 *
 * @publicApi
 */
export class InMemoryRedlock implements LockManager {
  readonly clock: Clock;
  readonly quorum = 1;
  readonly stats: RedlockStats = { acquired: 0, waited: 0, retries: 0 };
  /** @internal No Redis nodes. */
  readonly nodes: readonly never[] = [];
  private readonly config: RedlockConfig;
  private readonly store = new MemoryStore();
  private readonly schedule: Schedule;
  private readonly runs = new Set<Promise<unknown>>();
  private readonly logger: { warn(message: string): void };
  private closed = false;
  private quitting?: Promise<void>;
  /** What its acquires share (see `acquireInMemory`). */
  private readonly host: MemoryHost;

  constructor(options: InMemoryRedlockOptions = {}) {
    this.config = resolveRedlockConfig({ ...options, clients: [NODE] });
    this.clock = options.clock ?? monotonicClock;
    this.logger = options.logger ?? console;
    this.schedule = scheduler(this.clock);
    this.host = {
      ops: this,
      config: this.config,
      clock: this.clock,
      store: this.store,
      shapes: new ShapeBook(),
      schedule: this.schedule,
      stats: this.stats,
      isClosed: () => this.closed,
    };
  }

  get keyPrefix(): string {
    return this.config.keyPrefix;
  }

  get metaPrefix(): string {
    return this.config.metaPrefix;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  keyOf(resource: string): string {
    return this.config.keyOf(resource);
  }

  /** @internal See `LockManager.resolveTiming`. */
  resolveTiming(options?: AcquireOptions): ResolvedTiming {
    return callTiming(this.config, options);
  }

  /** See `Redlock.acquire`. */
  acquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock> {
    return acquireInMemory(
      this.host,
      resources,
      options,
      false,
    ) as Promise<Lock>;
  }

  /** See `Redlock.tryAcquire`. */
  tryAcquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock | null> {
    return acquireInMemory(this.host, resources, options, true);
  }

  /** See `Redlock.using`. */
  async using<T>(
    resources: string | string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    // As Redlock's: the acquire checks the options, the hold not again.
    const lock = await this.acquire(resources, options);
    return hold(this.holdContext(), lock, fn, options, true);
  }

  /** See `Redlock.hold`. */
  hold<T>(
    lock: Lock,
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    return hold(this.holdContext(), lock, fn, options);
  }

  private holdContext(): HoldContext {
    return {
      keepAlive: {
        watch: (l, o) => keepAlive(l, o, this.clock, this.schedule),
      },
      logger: this.logger,
      runs: this.runs,
      clock: this.clock,
    };
  }

  /** See `Redlock.watch`: the lease is extended every third of it, on this instance's clock. */
  watch(lock: Lock, options?: WatchdogOptions): () => void {
    checkWatchdogOptions(options);
    return keepAlive(lock, options, this.clock, this.schedule);
  }

  /** Always ready, until `quit()`. */
  ready(): Promise<boolean> {
    return Promise.resolve(!this.closed);
  }

  /** One node, `memory`, up until `quit()`. */
  health(): Promise<RedlockHealth> {
    const up = !this.closed;
    const node = up
      ? { node: NODE, up, latencyMs: 0 }
      : { node: NODE, up, error: 'closed' };
    return Promise.resolve({ healthy: up, up: +up, quorum: 1, nodes: [node] });
  }

  /**
   * See `Redlock.quit`: new acquires are refused, waiters give up, work
   * under a lock gets `shutdownTimeout` (real time, whatever the clock) to
   * finish, then every lock still held is released.
   */
  quit(): Promise<void> {
    return (this.quitting ??= this.shutDown());
  }

  /**
   * Makes the locks held on `resource` lost, as a failed extension or a
   * paused holder would: their keys are gone, their `signal` aborts, and
   * the `run()` / `@Locked` call under each rejects with `LockLostError`
   * once its work settles. Every lock of {@link holdersOf}: the holder of a
   * mutex or a write lock, every reader, every permit of a semaphore (name
   * a slot, `psp#permit-0`, for one). Returns whether a lock was held there.
   */
  loseLock(resource: string): boolean {
    const locks = this.holdersOf(resource);
    const now = this.clock.now();
    for (const lock of locks) {
      this.store.delete(lock, now);
      lock.markLost('the test made it lost (InMemoryRedlock.loseLock)');
    }
    return locks.length > 0;
  }

  /** See `Redlock.inspect`: one node, `memory`, where every lock is this instance's. */
  inspect<O extends number | InspectOptions | undefined = undefined>(
    resource: string,
    options?: O,
  ): Promise<InspectionOf<O>> {
    try {
      return Promise.resolve(
        inspectMemory(this.view(), resource, options) as InspectionOf<O>,
      );
    } catch (error) {
      return rejected(error);
    }
  }

  /** The store as the inspections read it, now. */
  private view(): MemoryInspected {
    const keyOf = (r: string) => this.keyOf(r);
    return { store: this.store, keyOf, now: this.clock.now() };
  }

  /** The lock held on `resource` now as a mutex or a write lock, or on a permit slot named (`psp#permit-0`), if any. */
  holderOf(resource: string): Lock | undefined {
    return this.store.holder(this.keyOf(resource), this.clock.now());
  }

  /**
   * Every lock holding `resource` now: its mutex or writer, its readers,
   * or the holders of its permits (a semaphore's). Tests count them: at
   * most `permits` holders of a semaphore, readers together.
   */
  holdersOf(resource: string): Lock[] {
    return holdersIn(this.view(), resource);
  }

  /** @internal Called by `Lock.extend`. */
  extendLock(lock: Lock, ttl: number | undefined): Promise<void> {
    const timing = callTiming(
      this.config,
      { ttl: ttl === undefined ? lock.ttl : ttl },
      '',
    );
    const now = this.clock.now();
    if (!this.store.extend(lock, now + timing.ttl, now)) {
      const reason = 'only 0 of 1 needed nodes still held the lock';
      lock.markLost(`extension failed: ${reason}`);
      this.store.delete(lock, now);
      return Promise.reject(
        new LockExtendError(lock.resources, reason, [
          { node: NODE, outcome: 'busy' },
        ]),
      );
    }
    lock.ttl = timing.ttl;
    lock.deadline = now + timing.ttl - timing.drift;
    return Promise.resolve();
  }

  /** @internal Called by `Lock.letExpire`: the entry lives `ms` more, unheld. */
  leaveLock(lock: Lock, ms: number): Promise<ReleaseResult> {
    const now = this.clock.now();
    const expired = now >= lock.deadline;
    const kept = this.store.extend(lock, now + ms, now);
    return Promise.resolve({
      released: false,
      expired,
      expiresIn: kept ? Math.ceil(ms) : undefined,
      nodes: [{ node: NODE, outcome: kept ? 'granted' : 'busy' }],
    });
  }

  /** @internal Called by `Lock.release`. */
  releaseLock(lock: Lock): Promise<ReleaseResult> {
    const now = this.clock.now();
    const expired = now >= lock.deadline;
    const deleted = this.store.delete(lock, now);
    return Promise.resolve({
      released: deleted,
      expired,
      nodes: [{ node: NODE, outcome: deleted ? 'granted' : 'busy' }],
    });
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    for (const wake of [...this.store.waiters]) wake();
    if (this.runs.size > 0)
      await settledWithin(this.runs, this.config.shutdownTimeout);
    for (const lock of this.store.held(this.clock.now())) {
      // Let go already, left to expire (`minHold`).
      if (lock.isReleased) continue;
      lock.markLost(
        'the instance shut down (quit(), or the application closing) while it was held; it was released',
      );
      await lock.release();
    }
  }
}
