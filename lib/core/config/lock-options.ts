// The options of one lock: its timing (per instance and per call) and what
// each call may add. `RedlockOptions` (options.ts) extends the timing.

/**
 * Timing of one lock; every field can be set per module and overridden per call.
 *
 * @publicApi
 */
export interface LockTimingOptions {
  /** Lease in ms: how long a lock lives on a node unless extended. Default 10000. Any finite value > 0. */
  ttl?: number;
  /**
   * How long `acquire` keeps trying while the resource is held, in ms; 0 =
   * one attempt (and one more, a few tens of ms later, when callers trying
   * at the same moment split the nodes so that none won). Default 5000.
   */
  waitTimeout?: number;
  /** Base delay between attempts, in ms. Default 50. */
  retryDelay?: number;
  /** Random extra delay added to `retryDelay`, 0 to this many ms, so competing clients desynchronise. Default 50. */
  retryJitter?: number;
  /**
   * How long one request to one node may take, in ms, before that node counts
   * as failed for this attempt. Must be below `ttl`. Default: `ttl / 10`,
   * capped at 100 ms. A node that is still answering other requests (busy
   * with a burst of thousands) is waited for in further steps of this
   * length, up to 20 of them; one that stopped answering is not.
   */
  nodeTimeout?: number;
}

/**
 * What to do when a lock held by `run()` or `@Locked` is lost while the work runs.
 * - `'throw'` (default): once the work settles, the call rejects with
 *   `LockLostError`, which carries the work's own result or error.
 * - `'ignore'`: the work's outcome is returned as is; the loss is only logged.
 *
 * @publicApi
 */
export type OnLockLost = 'throw' | 'ignore';

/**
 * Options of `acquire()` / `tryAcquire()`.
 *
 * @publicApi
 */
export interface AcquireOptions extends LockTimingOptions {
  /**
   * Gives up when aborted: the acquire rejects with the signal's reason,
   * whether it waits in this process, waits on the nodes or has an attempt
   * out (keys granted after the abort are taken back, never handed out). An
   * aborted signal rejects at once, before any Redis call. `tryAcquire`
   * reads it too.
   */
  signal?: AbortSignal;
  /**
   * Give the lock fencing tokens (`lock.fencingToken`, `lock.fencingTokens`),
   * at the cost of one more round trip to the nodes. Default: the module's
   * `fencing` (false).
   */
  fencing?: boolean;
  /**
   * Makes the lock a counting semaphore: at most `permits` (1 to 1024)
   * holders of each resource at once, across all processes. Each permit is a slot of its own, locked as a mutex is (the
   * lock's `resources` name the slots it holds, `<resource>#permit-<i>`), so
   * the bound holds over the quorum as the mutex's exclusion does. Every
   * caller of a resource must ask with the same `permits`: a call that asks
   * with another count, or without `permits`, while this process holds or
   * acquires the resource is refused with `LockShapeError`. Default: a
   * mutex (no permits).
   */
  permits?: number;
  /**
   * Makes the lock a read/write lock: any number of `'read'` holders of a
   * resource at once, or one `'write'` holder and nobody else. A writer
   * refused by readers keeps new readers out until it holds (or gives up),
   * so a stream of readers cannot starve it. Not with `permits`. Default: a
   * mutex (no mode).
   */
  mode?: LockMode;
}

/**
 * The side of a read/write lock a call takes (see `AcquireOptions.mode`).
 *
 * @publicApi
 */
export type LockMode = 'read' | 'write';

/**
 * Options of `run()`: an acquire plus the watchdog that keeps the lock while the work runs.
 *
 * @publicApi
 */
export interface RunOptions extends AcquireOptions {
  /** See {@link OnLockLost}. Default `'throw'`. */
  onLockLost?: OnLockLost;
  /**
   * Longest time, in ms, the watchdog keeps a lock alive. When reached the
   * lock counts as lost (its signal aborts) and is no longer extended, so it
   * may expire while the work still runs; it is released on the nodes when
   * the work settles. Default: no bound.
   */
  maxHold?: number;
  /**
   * Shortest time, in ms, the lock is held from the start of the work: when
   * the work ends sooner, its keys are not deleted but their lease is cut
   * to what is left of `minHold`, and they expire by themselves (also when
   * the process stops: `quit()` leaves them). For scheduled jobs
   * that must run once per tick on several replicas whose clocks and
   * timers differ: a lock released when a 10 ms job ends lets a replica
   * that ticks 50 ms later run the same tick again. Ignored by a call
   * that joins a lock an enclosing call holds. Default 0.
   */
  minHold?: number;
}
