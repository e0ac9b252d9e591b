import type { RedlockLogger } from './config/options.js';
import type { RedlockConfig } from './config/resolve.js';
import type { LockOperations } from './lock.js';
import type { Tally } from './nodes/poll.js';
import type { RedlockNode } from './nodes/redlock-node.js';
import type { NodeStanding } from './nodes/node-standing.js';
import type { SameServerCheck } from './nodes/same-server.js';
import type { HeldLocks } from './held-locks.js';
import type { Clock } from './util/clock.js';
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
 * What every operation of one `Redlock` instance shares: its nodes and the
 * quorum rule, its settings, the in-process queue, the release listener,
 * the watchdog, and the state `quit()` ends. Built once by `openContext`;
 * operations are functions of it, and `Redlock` is the facade that holds it.
 */
export interface RedlockContext extends ContentionHost {
  readonly config: RedlockConfig;
  /** The nodes, in configuration order. */
  readonly nodes: readonly RedlockNode[];
  /** Votes needed to hold a lock. */
  readonly quorum: number;
  /** The quorum rule that settles a poll (see `quorumRule`). */
  readonly isDecided: (tally: Tally) => boolean;
  readonly clock: Clock;
  readonly logger: RedlockLogger;
  /**
   * Callers competing for the same resources: the in-process queue and its
   * handoffs, the nodes' wait queues, release messages, what a release does.
   */
  readonly contention: Contention;
  /** The batched watchdog of every lock `hold()` and `watch()` keep. */
  readonly keepAlive: KeepAlive;
  /**
   * Which nodes' grants count, after restarts (see `restartQuarantine`)
   * and clock trouble (see `clockMonitor`, its `clockMonitor` field).
   */
  readonly standing: NodeStanding;
  /** Compares the nodes' run ids at each connection. */
  readonly sameServer: SameServerCheck;
  readonly stats: RedlockStats;
  /** What a `Lock` calls back for `extend()` and `release()`. */
  readonly lockOps: LockOperations;
  /** Set by `quit()`: waiting acquires give up, new ones are refused. */
  closed: boolean;
  /** Pending `ready()` waits: `quit()` ends them rather than leave their timers. */
  readonly readyWaits: Set<() => void>;
  /**
   * Acquires talking to the nodes, each with its node timeout: `quit()` lets
   * them finish (and take back what they were granted) before it closes the
   * connections.
   */
  readonly active: Map<Promise<unknown>, number>;
  /**
   * Releases that leave late (held back, after a renewal, a failed
   * attempt's take-back, a lock left to expire): `quit()` waits for them.
   */
  readonly deferred: Set<Promise<unknown>>;
  /** Locks handed to callers and not released: `quit()` releases them. */
  readonly held: HeldLocks;
  /** Work running under a lock (`hold()`): `quit()` gives it `shutdownTimeout` to finish. */
  readonly runs: Set<Promise<unknown>>;
  /** The shutdown, once `quit()` was called (a second call waits for the first). */
  quitting?: Promise<void>;
}
