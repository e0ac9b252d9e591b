import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { RedisServer } from './redis-nodes.mjs';

/** Cluster node timeout of the servers (ms): a killed master fails over in ~2.5 s. */
export declare const NODE_TIMEOUT: number;

/** One cluster-mode redis-server of a {@link RedisCluster}. */
export declare class ClusterServer {
  private constructor();
  /** The underlying process (restart(), dir, ...). */
  readonly server: RedisServer;
  /** Cluster bus port (--cluster-port). */
  readonly busPort: number;
  readonly port: number;
  /** Undefined once killed or stopped. */
  readonly pid: number | undefined;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Cluster node id (CLUSTER MYID). */
  readonly id: string;
  /** Role as last observed (refreshed by masters(), replicas(), settle(), failover()). */
  role: 'master' | 'replica';
  /** For a replica, its master's node id as last observed. */
  masterId: string | undefined;
  /** The server's directory (nodes.conf), removed by stop(). */
  readonly dir: string;
  /** Whether the process is running. */
  readonly alive: boolean;
  /** The harness's own plain client (do not close it). */
  admin(): Redis;
  /**
   * A fresh plain (non-cluster) client that does not reconnect (it ends by
   * itself once the server is killed); the caller closes it if still open.
   */
  client(options?: RedisOptions): Redis;
  /** SIGKILL: a crash; the node stays in the cluster, flagged failed. */
  kill(): Promise<void>;
  /**
   * Starts the server again on the same ports, empty but with its
   * nodes.conf: it rejoins as the node it was (a failed-over master comes
   * back as a replica). Follow with the cluster's settle().
   */
  restart(): Promise<void>;
  /** SIGSTOP. */
  freeze(): void;
  /** SIGCONT. */
  thaw(): void;
}

/** A slot left half-migrated by {@link RedisCluster.beginMigration}. */
export interface SlotMigration {
  slot: number;
  from: ClusterServer;
  to: ClusterServer;
}

/** Real Redis Cluster servers on 127.0.0.1 forming one settled cluster. */
export declare class RedisCluster {
  private constructor();
  /** Every server, masters first as created, killed ones included. */
  readonly servers: ClusterServer[];
  /** `redis://127.0.0.1:<port>` of every server. */
  readonly seeds: string[];
  /** Migrations begun and not finished, by slot. */
  readonly migrations: Map<number, SlotMigration>;
  /**
   * A new ioredis Cluster on the seeds; the caller closes it. Defaults:
   * reconnect every 100 ms, node connections with maxRetriesPerRequest 0
   * and a 1 s connect timeout; `options` override them. While the whole
   * cluster is down, commands wait in the offline queue until it is back;
   * `{ enableOfflineQueue: false }` fails them at once (and fails commands
   * sent before the client is 'ready'). Errors are listened to (no
   * "Unhandled error event" logs).
   */
  client(options?: ClusterOptions): Cluster;
  /** Running masters, as each server reports its ROLE now. */
  masters(): Promise<ClusterServer[]>;
  /** Running replicas, as each server reports its ROLE now. */
  replicas(): Promise<ClusterServer[]>;
  /** Updates every running server's role; returns the running servers. */
  refreshRoles(): Promise<ClusterServer[]>;
  /** CLUSTER KEYSLOT. */
  slotOf(key: string): Promise<number>;
  /** The server owning a slot (CLUSTER SLOTS). */
  ownerOf(slot: number): Promise<ClusterServer>;
  /** The master owning a key's slot. */
  masterOf(key: string): Promise<ClusterServer>;
  /**
   * Waits until every running server reports cluster_state ok and 16384
   * slots ok, all agree on nodes, roles and slots, killed nodes are flagged
   * failed, and every replica's link is up.
   */
  settle(timeoutMs?: number): Promise<void>;
  /**
   * SIGKILLs a master and waits until a replica of it is promoted and the
   * cluster has settled. Needs 3+ masters.
   */
  failover(
    master: ClusterServer,
  ): Promise<{ promoted: ClusterServer; ms: number }>;
  /** Moves a slot and its keys to another master, then settles. */
  migrateSlot(slot: number, to: ClusterServer): Promise<void>;
  /**
   * Leaves a slot half-migrated to `to`: source MIGRATING, target
   * IMPORTING, `keys` (default: half the slot's keys) moved already.
   */
  beginMigration(
    slot: number,
    to: ClusterServer,
    keys?: string[],
  ): Promise<SlotMigration>;
  /** Completes one begun migration (or all of them) and settles. */
  finishMigration(slot?: number): Promise<void>;
  /** SIGKILLs every server: the whole cluster down (dirs kept). */
  kill(): Promise<void>;
  /**
   * Restarts every server (killed or not) on the same ports, empty, with
   * its nodes.conf, and settles: the whole cluster back after kill().
   */
  restart(): Promise<void>;
  /** Kills every server by pid and removes their directories. */
  stop(): Promise<void>;
}

/**
 * Starts `masters` masters with `replicas` replicas each (cluster-enabled,
 * persistence off, free loopback ports) and resolves once settled. Redis 7+.
 */
export declare function startCluster(options?: {
  masters?: number;
  replicas?: number;
}): Promise<RedisCluster>;

/** Starts `count` clusters in parallel. */
export declare function startClusters(
  count: number,
  options?: { masters?: number; replicas?: number },
): Promise<RedisCluster[]>;

/** Stops every cluster this process started and has not stopped. */
export declare function stopAll(): Promise<void>;
