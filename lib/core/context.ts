import type { RedlockLogger } from './config/options.js';
import type { RedlockConfig } from './config/resolve.js';
import { channels } from './events/channels.js';
import type { LocalQueue } from './handoff/local-queue.js';
import { Lock, type LockOperations } from './lock.js';
import type { Tally } from './nodes/poll.js';
import type { RedlockNode } from './nodes/redlock-node.js';
import type { NodeStanding } from './nodes/node-standing.js';
import type { SameServerCheck } from './nodes/same-server.js';
import type { HeldLocks } from './operations/held-locks.js';
import type { Clock } from './util/clock.js';
import type { ReleaseListener } from './waiting/release-listener.js';
import type { Reservations } from './waiting/reservations.js';
import type { WaitStrategy } from './waiting/wait-strategy.js';
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
export interface RedlockContext {
  readonly config: RedlockConfig;
  /** The nodes, in configuration order. */
  readonly nodes: readonly RedlockNode[];
  /** Votes needed to hold a lock. */
  readonly quorum: number;
  /** The quorum rule that settles a poll (see `quorumRule`). */
  readonly isDecided: (tally: Tally) => boolean;
  readonly clock: Clock;
  readonly logger: RedlockLogger;
  readonly waitStrategy: WaitStrategy;
  /** Waiting acquires of this instance, queued per line (resource set). */
  readonly localQueue: LocalQueue;
  /** Release announcements from the nodes (one subscriber per node, on first wait). */
  readonly releases: ReleaseListener;
  /** The batched watchdog of every lock `hold()` and `watch()` keep. */
  readonly keepAlive: KeepAlive;
  /** Queue places that releases took for this instance's next acquire. */
  readonly reservations: Reservations;
  /**
   * Which nodes' grants count, after restarts (see `restartQuarantine`)
   * and clock trouble (see `clockMonitor`, its `clockMonitor` field).
   */
  readonly quarantine: NodeStanding;
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

/** What a new `Lock` is made of, beyond its instance. */
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
}

/** Every `Lock` of an instance is made here. */
export function createLock(ctx: RedlockContext, init: LockInit): Lock {
  const lock = new Lock(
    ctx.lockOps,
    init.resources,
    init.keys,
    init.value,
    init.ttl,
    init.deadline,
    init.queueName,
  );
  if (init.waited) lock.waited = true;
  if (init.waitedInRedis) lock.waitedInRedis = true;
  if (channels.release.hasSubscribers || channels.lost.hasSubscribers)
    lock.acquiredAt = ctx.clock.now();
  return lock;
}
