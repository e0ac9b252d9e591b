import { poll } from './poll.js';
import type { RedlockNode } from './redlock-node.js';

/**
 * One node as a health check saw it.
 *
 * @publicApi
 */
export interface NodeHealth {
  /** `host:port`, never with credentials. */
  readonly node: string;
  /** It answered PING within the check's timeout. */
  readonly up: boolean;
  /** How long its answer took, in ms, when it is up. */
  readonly latencyMs?: number;
  /** Why it is down: `timeout`, or the client's error message. */
  readonly error?: string;
  /**
   * Up, but restarted less than `restartQuarantine` ago (or its uptime not
   * read yet): it does not count toward the quorum.
   */
  readonly quarantined?: true;
  /**
   * Up, but its clock gained on this client's faster than `driftFactor`
   * allows not long ago (see `clockMonitor`): it does not count toward the
   * quorum.
   */
  readonly clockSuspect?: true;
  /**
   * A Redis Cluster node's masters (`host:port`, one per shard), all of
   * which answered; when one did not, the node is down and `error` names
   * that shard.
   */
  readonly shards?: readonly string[];
}

/**
 * The result of `Redlock.health()` / `LockService.health()`.
 *
 * @publicApi
 */
export interface RedlockHealth {
  /**
   * A quorum of nodes answered in time (quarantined and clock-suspect
   * ones do not count): a
   * lock attempt made now would reach enough nodes (whether it is granted
   * depends on who holds the lock).
   */
  readonly healthy: boolean;
  /** Nodes that answered (quarantined ones included). */
  readonly up: number;
  /** Votes a lock needs. */
  readonly quorum: number;
  /** Every node, in the order of `clients`. */
  readonly nodes: readonly NodeHealth[];
}

/**
 * How long `health()` waits for the nodes by default, in ms. More than a
 * lock attempt gives a node (the node timeout, 100 ms at most by default):
 * a readiness probe that fails whenever a loaded node answers one PING
 * late would take replicas out of service for nothing. The latencies it
 * reports show a node that is slow for locks.
 */
export const HEALTH_TIMEOUT_MS = 1000;

/**
 * PINGs every node at once and settles when all answered or `timeoutMs`
 * passed, whichever comes first: a frozen or unreachable node costs the
 * timeout, never more (a plain `client.ping()` on a frozen node waits as
 * long as the connection stays open, minutes on a hung host).
 * `counts(i)`: whether the restart quarantine lets node `i` count;
 * `clockSuspect(i)`: whether the clock monitor holds it out.
 */
export async function checkHealth(
  nodes: readonly RedlockNode[],
  quorum: number,
  timeoutMs: number,
  counts: (index: number) => boolean,
  clockSuspect: (index: number) => boolean = () => false,
): Promise<RedlockHealth> {
  const start = performance.now();
  const latencies = new Array<number | undefined>(nodes.length);
  const ballots = await poll(
    nodes,
    (node) => node.ping(),
    () => 'granted',
    timeoutMs,
    () => false,
    {
      answered: (i) => (latencies[i] ??= performance.now() - start),
      // Strictly the timeout: a node busy with other requests is still
      // too slow for a lock attempt now.
      limitMs: timeoutMs,
    },
  );
  const report = ballots.map(
    ({ node, outcome, error, reply }, i): NodeHealth => {
      if (outcome !== 'granted')
        return { node, up: false, error: error ?? outcome };
      const latencyMs = round(latencies[i] ?? 0);
      return {
        node,
        up: true,
        latencyMs,
        ...(counts(i) ? {} : { quarantined: true }),
        ...(clockSuspect(i) ? { clockSuspect: true } : {}),
        ...(Array.isArray(reply) ? { shards: reply as string[] } : {}),
      };
    },
  );
  const up = report.filter((n) => n.up).length;
  const counted = report.filter(
    (n) => n.up && !n.quarantined && !n.clockSuspect,
  ).length;
  return { healthy: counted >= quorum, up, quorum, nodes: report };
}

/** Latency to the tenth of a millisecond: finer says nothing on a network. */
function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
