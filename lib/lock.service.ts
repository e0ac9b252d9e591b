import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { RedlockHealth } from './core/nodes/health.js';
import type {
  InspectionOf,
  InspectOptions,
} from './core/inspection/inspect-options.js';
import type { Lock } from './core/lock.js';
import type { LockManager } from './core/lock-manager.js';
import type {
  AcquireOptions,
  RedlockLogger,
  RunOptions,
} from './core/config/options.js';
import type { RedlockModuleOptions } from './interfaces/redlock-module-options.interface.js';
import {
  REDLOCK,
  REDLOCK_LOGGER_CONTEXT,
  REDLOCK_MODULE_OPTIONS,
} from './redlock.constants.js';
import { LockServiceUnavailableError } from './errors/lock-service-unavailable.error.js';
import { currentLock } from './utils/async-context.js';
import { adviseRetryAfter, type RetryAfter } from './utils/retry-after.js';
import { runLocked } from './utils/run-locked.js';

/**
 * Distributed locks for application code: inject it where `@Locked` is not
 * enough. Per-call options override the module's.
 *
 * @publicApi
 */
@Injectable()
export class LockService {
  /** The module's `retryAfter`, recorded on the conflicts of this service's calls. */
  readonly retryAfter?: RetryAfter;
  /** @internal Where skipped calls say why (`onUnavailable: 'warn'`): the module's logger. */
  readonly logger: RedlockLogger;

  constructor(
    /**
     * The lock set's lock manager: its `Redlock`, or the `InMemoryRedlock`
     * of `RedlockTestingModule` (for `watch()`, `stats`, `quit()`...).
     */
    @Inject(REDLOCK) readonly redlock: LockManager,
    @Optional()
    @Inject(REDLOCK_MODULE_OPTIONS)
    options?: Pick<RedlockModuleOptions, 'retryAfter' | 'logger'>,
  ) {
    this.retryAfter = options?.retryAfter;
    this.logger = options?.logger ?? new Logger(REDLOCK_LOGGER_CONTEXT);
  }

  /** Records the module's `retryAfter` on a conflict, and rethrows it. */
  private readonly advise = (error: unknown): never => {
    adviseRetryAfter(error, this.retryAfter);
    throw error;
  };

  /**
   * Acquires a lock on the resources (all or nothing), waiting up to
   * `waitTimeout` while they are held; rejects with `LockNotAcquiredError`
   * otherwise, and with `LockServiceUnavailableError` once the application
   * is shutting down. Release it with `lock.release()`.
   */
  acquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock> {
    if (this.redlock.isClosed) return refused('LockService.acquire');
    const acquiring = this.redlock.acquire(resources, options);
    return this.retryAfter === undefined
      ? acquiring
      : acquiring.catch(this.advise);
  }

  /**
   * One attempt, no waiting (two when simultaneous callers split the
   * nodes): `null` when the resources are held; rejects with
   * `LockNotAcquiredError` (reason `unreachable` or `expired`) when the quorum
   * could not answer, so an outage never looks like "busy".
   */
  tryAcquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock | null> {
    if (this.redlock.isClosed) return refused('LockService.tryAcquire');
    const trying = this.redlock.tryAcquire(resources, options);
    return this.retryAfter === undefined ? trying : trying.catch(this.advise);
  }

  /**
   * Acquires, runs `fn(lock)` with a watchdog extending the lock every third
   * of its lease, and releases it in all cases. `fn`'s own error propagates
   * unchanged; a lost lock rejects with `LockLostError` carrying `fn`'s
   * outcome (unless `onLockLost: 'ignore'`).
   *
   * Reentrant by async context: resources that an enclosing `run()` or
   * `@Locked` call of the same call chain holds are joined, not acquired
   * again (that call releases them, after the nested calls finished); the
   * others are acquired as usual. Other call chains wait as always.
   */
  run<T>(
    resources: string | string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    return runLocked(this.redlock, resources, fn, options, {
      caller: 'LockService.run',
      retryAfter: this.retryAfter,
    }) as Promise<T>;
  }

  /**
   * Whether a quorum of nodes answers PING within `timeoutMs` (default
   * 1 s), with each node's latency or error; never rejects. For readiness
   * probes: see docs/observability.md, "Health checks".
   */
  health(timeoutMs?: number): Promise<RedlockHealth> {
    return this.redlock.health(timeoutMs);
  }

  /**
   * What the nodes hold for `resource`: per node whether the key exists,
   * its remaining lease, whether this instance holds it (never a lock's
   * value), the waiters queued and the last fencing token; with
   * `{ permits }` a semaphore's slots, with `{ mode }` a read/write lock's
   * writer or readers. For admin endpoints ("who holds order:42, until
   * when"). See `Redlock.inspect`.
   */
  inspect<O extends number | InspectOptions | undefined = undefined>(
    resource: string,
    options?: O,
  ): Promise<InspectionOf<O>> {
    return this.redlock.inspect(resource, options);
  }

  /**
   * The lock of the innermost `run()` / `@Locked` call around the caller
   * (through AsyncLocalStorage), or `undefined` outside one. Check
   * `current()?.signal.aborted` (or pass the signal on) before committing a
   * write. A nested call that only joined held resources sees the lock it
   * joined.
   */
  current(): Lock | undefined {
    return currentLock(this.redlock);
  }

  /** Like {@link LockService.current}, without an instance: the innermost lock of any app. */
  static current(): Lock | undefined {
    return currentLock();
  }
}

/** A call made while the application shuts down: no new lock is taken. */
function refused(caller: string): Promise<never> {
  return Promise.reject(new LockServiceUnavailableError(caller, 'shutdown'));
}
