import type { RedlockLogger } from '../config/options.js';
import type { RedlockConfig } from '../config/resolve.js';
import type { LockOperations } from '../lock.js';
import type { NodeStanding } from '../nodes/node-standing.js';
import type { Tally } from '../nodes/poll.js';
import type { RedlockNode } from '../nodes/redlock-node.js';
import type { Clock } from '../util/clock.js';
import type { LocalQueue } from './local-queue.js';
import type { ReleaseListener } from './release-listener.js';
import type { Reservations } from './reservations.js';
import type { WaitStrategy } from '../config/wait-strategy.js';

/**
 * What contention needs from the `Redlock` instance it serves: the nodes
 * and the quorum rule, settings, clock and logger, how locks are made, and
 * the state `quit()` ends. The instance's context is one.
 */
export interface ContentionHost {
  readonly config: RedlockConfig;
  /** The nodes, in configuration order. */
  readonly nodes: readonly RedlockNode[];
  /** Votes needed to hold a lock. */
  readonly quorum: number;
  /** The quorum rule that settles a poll. */
  readonly isDecided: (tally: Tally) => boolean;
  readonly clock: Clock;
  readonly logger: RedlockLogger;
  /** What a `Lock` calls back; every lock contention makes uses it. */
  readonly lockOps: LockOperations;
  /** Which nodes' grants count now (restarts, clock trouble). */
  readonly standing: NodeStanding;
  /** True once `quit()` ran: nothing is handed over, reserved or renewed. */
  readonly closed: boolean;
  /** Work `quit()` waits for before it closes the connections. */
  readonly deferred: Set<Promise<unknown>>;
}

/** The parts of {@link Contention} its functions share (one per instance). */
export interface ContentionParts {
  readonly host: ContentionHost;
  /** Callers of this process waiting for the same resources, in lines. */
  readonly queue: LocalQueue;
  /** Release messages from the nodes, and the waiters they wake. */
  readonly listener: ReleaseListener;
  /** Queue places releases took for this instance's next acquire. */
  readonly reservations: Reservations;
  /** How a waiting acquire waits between attempts. */
  readonly strategy: WaitStrategy;
}
