import type { SameServerCheck } from './nodes/same-server.js';
import type { HeldLocks } from './held-locks.js';
import type { Contention } from './contention/contention.js';
import type { ContentionHost } from './contention/host.js';
import type { KeepAlive } from './watchdog/keep-alive.js';

/** Counters since an instance was created (see `Redlock.stats`). */
export interface RedlockStats {
  acquired: number;
  waited: number;
  retries: number;
}

/**
 * What every operation of one `Redlock` instance shares: what contention
 * needs from it (`ContentionHost`: nodes, quorum rule, settings, clock,
 * logger, node standing, the work `quit()` waits for), contention itself,
 * the watchdog, and the state `quit()` ends. Built once by `openContext`;
 * operations are functions of it, and `Redlock` is the facade that holds it.
 */
export interface RedlockContext extends ContentionHost {
  /**
   * Callers competing for the same resources: the in-process queue and its
   * handoffs, the nodes' wait queues, release messages, what a release does.
   */
  readonly contention: Contention;
  /** The batched watchdog of every lock `hold()` and `watch()` keep. */
  readonly keepAlive: KeepAlive;
  /** Compares the nodes' run ids at each connection. */
  readonly sameServer: SameServerCheck;
  readonly stats: RedlockStats;
  /** Set by `quit()`: waiting acquires give up, new ones are refused (read-only to contention). */
  closed: boolean;
  /** Pending `ready()` waits and semaphore and read/write waits: `quit()` ends them rather than leave their timers. */
  readonly readyWaits: Set<() => void>;
  /**
   * Acquires talking to the nodes, each with its node timeout: `quit()` lets
   * them finish (and take back what they were granted) before it closes the
   * connections.
   */
  readonly active: Map<Promise<unknown>, number>;
  /** Locks handed to callers and not released: `quit()` releases them. */
  readonly held: HeldLocks;
  /** Work running under a lock (`hold()`): `quit()` gives it `shutdownTimeout` to finish. */
  readonly runs: Set<Promise<unknown>>;
  /** The shutdown, once `quit()` was called (a second call waits for the first). */
  quitting?: Promise<void>;
}
