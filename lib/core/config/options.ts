import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { LockLostError } from '../../errors/lock-lost.error.js';
import type { Clock } from '../util/clock.js';
import type { WaitStrategy } from './wait-strategy.js';

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
}

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
