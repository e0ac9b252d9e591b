import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { LockLostError } from '../../errors/lock-lost.error.js';
import type { Clock } from '../util/clock.js';
import type { LockTimingOptions } from './lock-options.js';
import type { WaitStrategy } from './wait-strategy.js';

export type * from './lock-options.js';

/**
 * One node of the quorum: a Redis master, as an ioredis instance
 * (borrowed: closed by the library only with `closeClients`), or a URL
 * (`redis://`, `rediss://` for TLS, with user, password and db) or
 * `RedisOptions` from which the library creates and owns a client; or a
 * whole Redis Cluster, as an ioredis `Cluster` instance or a
 * {@link RedisClusterConfig}.
 *
 * @publicApi
 */
export type RedisNodeConfig =
  Redis | string | RedisOptions | Cluster | RedisClusterConfig;

/**
 * A Redis Cluster the library connects to (and owns) as one node of the
 * quorum. Credentials and TLS come from the seed URLs (or
 * `options.redisOptions`) and are never logged.
 *
 * @publicApi
 */
export interface RedisClusterConfig {
  /**
   * Seed nodes: `redis://` or `rediss://` URLs (user and password of the
   * first one apply to every node) or `{ host, port }`. At least one.
   */
  cluster: (string | { host: string; port: number })[];
  /** ioredis `ClusterOptions`; the library's defaults fill what is not set. */
  options?: ClusterOptions;
}

/**
 * Something to log warnings to (a Nest `Logger` fits).
 *
 * @publicApi
 */
export interface RedlockLogger {
  warn(message: string): void;
}

/**
 * Options of the framework-free {@link Redlock} core (and of `RedlockModule`).
 *
 * @publicApi
 */
export interface RedlockOptions extends LockTimingOptions {
  /**
   * The N independent Redis masters (no replication between them). At least
   * one. Each is a server reached directly or through Sentinel, or a whole
   * Redis Cluster (one node of the quorum; see docs/cluster.md).
   */
  clients: RedisNodeConfig[];
  /** Clock drift allowance as a fraction of the ttl, in [0, 0.5). Default 0.01 (plus 2 ms). */
  driftFactor?: number;
  /** Prefix of lock keys: resource `order:42` is key `lock:order:42`. Default `lock:`. */
  keyPrefix?: string;
  /**
   * Put each resource's keys in one Redis Cluster hash slot: resource
   * `order:42` is key `lock:{order:42}` (docs/cluster.md has the format).
   * Default: true when a node is a Redis Cluster, else false. Every
   * replica locking the same resources must agree: set it to true on all
   * of them before a Cluster joins the nodes of servers already in use.
   */
  hashTags?: boolean;
  /**
   * Prefix of everything else the library keeps in Redis (wait queues,
   * fencing counters, channels). Must not start with `keyPrefix` nor be its
   * prefix. Default `redlock:`. Replicas that lock the same resources must
   * share it: with different ones they still exclude each other, but keep
   * separate wait queues and fencing counters (tokens not comparable).
   */
  metaPrefix?: string;
  /**
   * Give every lock fencing tokens unless a call says `fencing: false`
   * (see {@link AcquireOptions.fencing}). Default false.
   */
  fencing?: boolean;
  /** Votes needed; default N/2+1. Must be more than N/2 and at most N. */
  quorum?: number;
  /** Monotonic clock; tests inject their own. */
  clock?: Clock;
  /**
   * How a waiting acquire waits between attempts. Default: `WakeOnRelease`,
   * woken by the nodes' release messages, with the jittered retry as fallback.
   */
  waitStrategy?: WaitStrategy;
  /**
   * In-process handoff: a lock released while another caller of the same
   * process waits for the same resources with the same `ttl` passes to it
   * without a Redis round trip (same value, same validity deadline), at
   * most this many times in a row, and for at most 250 ms after the first
   * of them, before it goes back through Redis so other processes get
   * their turn (the time bound matters for long critical sections: 8 of
   * 500 ms in a row would keep another process waiting 4 s); when no other
   * process is queued on the nodes, they renew the lease for the next
   * caller in one round trip instead (3 streaks in a row at most). A
   * contended lock (its caller had to wait) released while nobody waits is
   * kept until the event loop turns, for a caller that asks right after
   * (`ReleaseResult.deferred`), within the same count. 0 disables all three.
   * Default 8.
   */
  localHandoff?: number;
  /** Where warnings go. Default: `console`. */
  logger?: RedlockLogger;
  /**
   * Clients the library creates (from URLs or `RedisOptions`) connect at
   * `ready()` or at the first lock instead of at construction. Default
   * false; `RedlockModule` sets it, and connects them while the
   * application initialises (`onModuleInit`), so that a bootstrap that
   * fails before leaves no connection open (Nest runs no shutdown hook
   * then). Client instances passed in are left as they are.
   */
  lazyConnect?: boolean;
  /**
   * Take ownership of the ioredis instances passed in `clients`: `quit()`
   * (and so `app.close()`) closes them after the locks still held are
   * released, as it closes the clients it creates from URLs. Default
   * false: they are left to their owner, who must close them only after
   * `quit()` (in Nest, in `onApplicationShutdown` or later); closed
   * before, the releases sent at shutdown cannot reach their nodes and
   * the keys stay until their lease ends.
   */
  closeClients?: boolean;
  /**
   * "Delayed restart" on the client side, in ms: a node counts toward a
   * quorum only once it has been up this long (its uptime is read at every
   * connection), so a node that restarted without persistence, and lost
   * the keys it held, cannot grant a lock that another client still holds
   * through it. Set it to at least the longest `ttl` any client uses.
   * Default 0 (off): persist with `appendfsync always`, or delay restarts,
   * instead. Needs the `INFO` command on the nodes. See docs/safety.md.
   */
  restartQuarantine?: number;
  /**
   * How long, in ms, `quit()` (and so `app.close()`) lets work running
   * under a lock (`using()`, `hold()`, `run()`, `@Locked`) finish before it
   * aborts those locks' signals and releases them on the nodes; locks held
   * by no such work are released at once. New acquires are refused from
   * the start. Default 5000: a shutdown then fits, with room for the HTTP
   * server's own drain, inside `docker stop`'s 10 s and Kubernetes' 30 s
   * grace before the process is killed (a killed holder leaves its keys
   * until their lease ends).
   */
  shutdownTimeout?: number;
  /**
   * Watch each node's clock (`TIME`) against this client's monotonic
   * clock: a node whose clock gains faster than `driftFactor` allows (a
   * forward jump, or a clock running fast, which make its keys expire
   * before the validity computed for them ends) stops counting toward a
   * quorum, as a quarantined node does, until it has kept time for a
   * while. `true` for the defaults, or {@link ClockMonitorOptions}.
   * Default false (off). A jump is seen at the next reading, so the
   * monitor narrows the hazard rather than closing it; see
   * docs/safety.md.
   */
  clockMonitor?: boolean | ClockMonitorOptions;
  /**
   * Let an extension put a lock's key back on a node that lost it (a node
   * that restarted empty), with `SET NX`, but only after a quorum of the
   * other nodes extended the lock in the same round within its validity,
   * and never where another value sits. The put-back keys do not count
   * toward that round. A lock kept by the watchdog then survives any
   * number of rolling restarts spaced more than a third of its lease
   * apart. Default false: an extension never re-creates a key. See
   * docs/safety.md for why it never makes a second holder.
   */
  recreateOnExtend?: boolean;
}

/**
 * Settings of the node-clock monitor ({@link RedlockOptions.clockMonitor}).
 *
 * @publicApi
 */
export interface ClockMonitorOptions {
  /** How often each node's clock is read, in ms. Default 1000. */
  interval?: number;
  /**
   * How long, in ms, a node whose clock ran fast stays out of the quorum
   * after the last reading that showed it: set it to at least the longest
   * `ttl` any client uses, since a lock taken before the jump may count on
   * the node until then. Default: the instance's `ttl`.
   */
  exclusion?: number;
}

/**
 * Options of a watchdog (`Redlock.watch`, and `run()` / `@Locked` through it).
 *
 * @publicApi
 */
export interface WatchdogOptions {
  /** Longest time in ms the lock is kept alive; then it counts as lost. Default: no bound. */
  maxHold?: number;
  /** Called once if the lock is lost. */
  onLost?: (error: LockLostError) => void;
}
