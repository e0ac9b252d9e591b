import { randomFillSync } from 'node:crypto';
import { LockExtendError } from '../errors/lock-extend.error.js';
import type { LockLostError } from '../errors/lock-lost.error.js';
import {
  LockNotAcquiredError,
  type LockFailureReason,
} from '../errors/lock-not-acquired.error.js';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { monotonicClock, type Clock } from './clock.js';
import { fenceCounterKey, issueFencingTokens } from './fencing.js';
import {
  checkHealth,
  HEALTH_TIMEOUT_MS,
  type RedlockHealth,
} from './health.js';
import { KeepAlive, type WatchdogOptions } from './keep-alive.js';
import { LocalQueue } from './local-queue.js';
import { Lock, type LockOperations, type ReleaseResult } from './lock.js';
import {
  BUSY_WAIT_LIMIT,
  poll,
  votesOf,
  type Ballot,
  type Tally,
} from './poll.js';
import { deadlines } from './deadline-timer.js';
import {
  closeNodes,
  connectOwned,
  createNodes,
  type RedlockNode,
} from './redlock-node.js';
import { resolveRedlockConfig } from './redlock-config.js';
import { RestartQuarantine } from './restart-quarantine.js';
import {
  REDLOCK_DEFAULTS,
  type AcquireOptions,
  type RedlockLogger,
  type RedlockOptions,
  type RunOptions,
} from './redlock-options.js';
import { nodeBit, ReleaseListener } from './release-listener.js';
import { Reservations, type Reservation } from './reservations.js';
import { normalizeResources } from './resources.js';
import {
  abortReason,
  checkRunOptions,
  checkSignalOption,
  checkWatchdogOptions,
} from './run-options.js';
import {
  ACQUIRE_SCRIPT,
  acquireArgs,
  acquireReply,
  EXTEND_MANY_SCRIPT,
  extendManyArgs,
  EXTEND_SCRIPT,
  KEEP_SCRIPT,
  packPlace,
  RELEASE_SCRIPT,
  releaseArgs,
  releaseReply,
} from './scripts/index.js';
import {
  clockDrift,
  optionalBoolean,
  requireNonNegative,
  requirePositive,
  resolveTiming,
  show,
  type ResolvedTiming,
} from './timing.js';
import {
  WakeOnRelease,
  type WaitContext,
  type WaitStrategy,
} from './wait-strategy.js';

/**
 * The local queue a caller waits in: its keys, and whether it wants fencing
 * tokens (a handed-over lease has none, so fenced callers queue apart).
 * Distinct for distinct key lists, whatever characters resource names hold:
 * a line shared by two resource sets would hand one's lease to the other.
 */
function localLine(keys: readonly string[], fencing: boolean): string {
  // One key without fencing, the common case: one concatenation.
  if (keys.length === 1 && !fencing) return '1' + keys[0];
  return (fencing ? 'f' : 'm') + JSON.stringify(keys);
}

/** Bytes of randomness in a lock value (the Redlock page suggests 20). */
const VALUE_BYTES = 20;

/** Locks per extend-many script call (a pipeline per node carries all calls of a tick). */
const EXTEND_CHUNK = 500;

/**
 * Random lock values, cut from a pooled buffer: one `randomFillSync` per 200
 * values instead of one per acquire (it dominated the client's CPU in the
 * uncontended benchmark after the socket writes).
 */
const valuePool = { buffer: Buffer.alloc(VALUE_BYTES * 200), offset: Infinity };
function randomValue(): string {
  if (valuePool.offset + VALUE_BYTES > valuePool.buffer.length) {
    randomFillSync(valuePool.buffer);
    valuePool.offset = 0;
  }
  const value = valuePool.buffer.toString(
    'base64url',
    valuePool.offset,
    valuePool.offset + VALUE_BYTES,
  );
  valuePool.offset += VALUE_BYTES;
  return value;
}

/** The outcome of one acquire attempt. */
interface Attempt {
  /** When it was sent (clock ms). */
  start: number;
  lock?: Lock;
  reason?: LockFailureReason;
  ballots: Ballot[];
  holderTtl?: number;
}

/** A waiting acquire's place in the nodes' wait queues (see WAIT_QUEUE_LUA). */
interface QueuePlace {
  /** How long, in ms, the place lives unless an attempt renews it. */
  life: number;
  /** When it first asked (wall clock ms), its rank on every node. */
  arrival: number;
  /** Its name in the queues. */
  name: string;
  /**
   * Per node, when the latest attempt that node answered was sent (see
   * `transferred`), recorded even for answers that came after the attempt
   * was decided.
   */
  answeredAt: number[];
}

/**
 * The Redlock algorithm over N independent Redis masters, free of any
 * framework: acquire on all nodes at once, held with a quorum within the
 * lease minus elapsed time and clock drift; release and extend by value.
 *
 * @publicApi
 */
export class Redlock implements LockOperations {
  /** The nodes, in configuration order. */
  readonly nodes: readonly RedlockNode[];
  /**
   * Counters since this instance was created (for metrics and dashboards):
   * locks `acquired` by `acquire()`, how many of them `waited` (in this
   * process's local queue or in Redis), and the `retries` sent to Redis
   * while waiting.
   */
  readonly stats = { acquired: 0, waited: 0, retries: 0 };
  /** Votes needed to hold a lock. */
  readonly quorum: number;
  readonly clock: Clock;
  readonly keyPrefix: string;
  readonly metaPrefix: string;
  private readonly driftFactor: number;
  private readonly fencing: boolean;
  private readonly timing: ResolvedTiming;
  private readonly waitStrategy: WaitStrategy;
  private readonly logger: RedlockLogger;
  private readonly localHandoff: number;
  /** @internal Waiting acquires of this instance, queued per resource set. */
  readonly localQueue = new LocalQueue();
  /** @internal Release announcements from the nodes (one subscriber per node, on first wait). */
  readonly releases: ReleaseListener;
  /** @internal The batched watchdog of every lock `using()` holds. */
  readonly keepAlive: KeepAlive;
  /** @internal Queue places that releases took for this instance's next acquire. */
  readonly reservations: Reservations;
  /** @internal Which nodes' grants count, after restarts (see `restartQuarantine`). */
  readonly quarantine: RestartQuarantine;
  /** Set by `quit()`: waiting acquires give up, new ones are refused. */
  private closed = false;
  /** Pending `ready()` waits: `quit()` ends them rather than leave their timers. */
  private readonly readyWaits = new Set<() => void>();
  /**
   * Acquires talking to the nodes, each with its node timeout: `quit()` lets
   * them finish (and take back what they were granted) before it closes the
   * connections.
   */
  private readonly active = new Map<Promise<unknown>, number>();
  /** Releases that leave late, held back (`linger`) or after a renewal (`renewForNext`): `quit()` waits for them. */
  private readonly deferred = new Set<Promise<ReleaseResult>>();

  constructor(private readonly options: RedlockOptions) {
    const config = resolveRedlockConfig(options);
    this.driftFactor = config.driftFactor;
    this.timing = config.timing;
    this.keyPrefix = config.keyPrefix;
    this.metaPrefix = config.metaPrefix;
    this.quorum = config.quorum;
    this.fencing = config.fencing;
    this.localHandoff = config.localHandoff;
    this.clock = options.clock ?? monotonicClock;
    this.logger = options.logger ?? console;
    this.nodes = createNodes(options.clients);
    this.quarantine = new RestartQuarantine(
      this.nodes,
      config.restartQuarantine,
      this.clock,
      this.logger,
    );
    if (!config.lazyConnect) connectOwned(this.nodes);
    this.releases = new ReleaseListener(
      this.nodes,
      this.metaPrefix,
      this.quorum,
    );
    this.waitStrategy =
      options.waitStrategy ?? new WakeOnRelease(this.releases);
    this.reservations = new Reservations(this.releases, (r) =>
      this.sendRelease(
        this.nodes.filter((_, i) => r.maybe[i]),
        r.keys,
        r.value,
        this.timing.nodeTimeout,
        { name: r.name, leave: true },
      ),
    );
    this.keepAlive = new KeepAlive({
      now: () => this.clock.now(),
      extendMany: (locks) => this.extendMany(locks),
    });
    const count = this.nodes.length;
    if (count % 2 === 0) {
      this.logger.warn(
        `Redlock configured with an even number of nodes (${count}): it tolerates no more failures than ${count - 1} nodes would`,
      );
    }
  }

  /** Resolves timing for one call: the module's, overridden by the call's. */
  resolveTiming(options?: AcquireOptions): ResolvedTiming {
    if (options === undefined) return this.timing;
    if (typeof options !== 'object' || options === null) {
      throw new RedlockConfigError(
        'options',
        `must be an object, got ${show(options)}`,
      );
    }
    if (
      options.ttl === undefined &&
      options.nodeTimeout === undefined &&
      options.waitTimeout === undefined &&
      options.retryDelay === undefined &&
      options.retryJitter === undefined
    ) {
      return this.timing;
    }
    return resolveTiming(this.options, options, this.driftFactor, 'options.');
  }

  /** Whether one call's lock gets fencing tokens: the call's option, else the module's. */
  private resolveFencing(options?: AcquireOptions): boolean {
    return optionalBoolean('options.fencing', options?.fencing) ?? this.fencing;
  }

  /** The Redis key of a resource. */
  keyOf(resource: string): string {
    return this.keyPrefix + resource;
  }

  /**
   * Acquires a lock on every resource (all or nothing), waiting up to
   * `waitTimeout` while they are held. Rejects with `LockNotAcquiredError`
   * when the time is up, saying whether the resources were busy or the quorum
   * unreachable; a failed acquire leaves no key behind.
   */
  async acquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock> {
    const names = normalizeResources(resources);
    const timing = this.resolveTiming(options);
    const keys = names.map((r) => this.keyOf(r));
    const fencing = this.resolveFencing(options);
    const signal = checkSignalOption(options?.signal);
    const stop = this.stopReason(names, 0, signal);
    if (stop !== undefined) throw stop;
    const giveUpAt = this.clock.now() + timing.waitTimeout;
    // Callers of this process for the same resources take turns: only the
    // one whose turn it is talks to Redis.
    const line = localLine(keys, fencing);
    const queuedLocally = this.localQueue.isBusy(line);
    const turn = await this.localQueue.enter(
      line,
      Math.ceil(timing.ttl),
      timing.waitTimeout,
      signal,
    );
    if (turn instanceof Lock) {
      // The previous holder in this process handed its lease over.
      this.localQueue.hold(line, turn);
      this.count(true);
      return turn;
    }
    if (!turn) {
      if (this.closed) throw this.closedError(names, 0);
      const holder = this.localQueue.holderOf(line);
      throw new LockNotAcquiredError(
        names,
        0,
        'busy',
        [],
        holder?.remaining() || timing.retryDelay,
      );
    }
    let lock: Lock | undefined;
    const inTurn = this.acquireInTurn(
      names,
      keys,
      line,
      timing,
      giveUpAt,
      signal,
      fencing,
    );
    this.active.set(inTurn, timing.nodeTimeout);
    try {
      lock = await inTurn;
      this.count(queuedLocally || lock.waited);
      return lock;
    } finally {
      this.active.delete(inTurn);
      if (lock) this.localQueue.hold(line, lock);
      else this.localQueue.leave(line);
    }
  }

  private async acquireInTurn(
    names: string[],
    keys: string[],
    line: string,
    timing: ResolvedTiming,
    giveUpAt: number,
    signal: AbortSignal | undefined,
    fencing: boolean,
  ): Promise<Lock> {
    // Only waiters that listen for release messages take a place in the
    // nodes' queues: a polling waiter named head would be told in vain.
    // A release may give the key outright only to a single-resource lock
    // without fencing (lease > 0 in its name, see transferred()).
    const waits =
      timing.waitTimeout > 0 && this.waitStrategy instanceof WakeOnRelease;
    const lease = keys.length === 1 && !fencing ? Math.ceil(timing.ttl) : 0;
    // A place the release of our previous lock took for us (see the release
    // script): adopt it instead of asking to be queued.
    const reserved =
      waits && lease > 0 ? this.reservations.take(line, lease) : undefined;
    const value = reserved?.value ?? randomValue();
    const queue: QueuePlace | undefined = waits
      ? {
          life: queueLife(timing),
          arrival: reserved?.arrival ?? Date.now(),
          name: reserved?.name ?? this.releases.member(value, lease),
          answeredAt: reserved ? this.nodes.map(() => reserved.sentAt) : [],
        }
      : undefined;
    let attempt = 0;
    let takeBack = false;
    // A key given to us while an attempt is still out is heard all the
    // same, once this instance listens (its first wait subscribes).
    let stopExpecting = queue && this.releases.expect(keys, value);
    try {
      if (reserved && queue && reserved.placed >= this.quorum) {
        // quit() or an abort in the turn between acquire()'s own check
        // and here: no lock from the adopted place (the clean-up below
        // gives it back). Attempts and waits check for themselves.
        const stop = this.stopReason(names, attempt, signal);
        if (stop !== undefined) throw stop;
        // Queued on a quorum: the key went to the waiter before us there, so
        // an attempt could only be refused. Wait for our turn.
        const lock = reserved.heard
          ? this.transferred(
              names,
              keys,
              value,
              timing,
              this.releases.takeGiven(value),
              queue,
            )
          : await this.awaitTurn(names, keys, value, timing, queue, {
              attempt,
              remaining: giveUpAt - this.clock.now(),
              signal,
            });
        if (lock) return lock;
        stopExpecting ??= this.releases.expect(keys, value);
      }
      for (;;) {
        const stop = this.stopReason(names, attempt, signal);
        if (stop !== undefined) throw stop;
        attempt++;
        const result = await this.attempt(
          names,
          keys,
          value,
          timing,
          fencing,
          queue,
        );
        if (result.lock) {
          // Granted while quit() ran (a lock now could not even be
          // released) or after the caller gave up: the clean-up below
          // takes the keys back.
          const stop = this.stopReason(names, attempt, signal);
          if (stop !== undefined) {
            takeBack = true;
            throw stop;
          }
          result.lock.waited = attempt > 1 || reserved !== undefined;
          // A place reserved on no node: nobody was queued at the release.
          result.lock.waitedInRedis = attempt > 1 || !!reserved?.placed;
          return result.lock;
        }
        const remaining = giveUpAt - this.clock.now();
        if (remaining <= 0) throw this.notAcquired(names, attempt, result);
        this.stats.retries++;
        const lock = await this.awaitTurn(names, keys, value, timing, queue, {
          attempt,
          remaining,
          holderTtl: result.holderTtl,
          signal,
        });
        if (lock) return lock;
        if (queue) stopExpecting ??= this.releases.expect(keys, value);
      }
    } catch (error) {
      // Gave up (timeout, abort, outage, quit()): leave the nodes' wait
      // queues, or releases would give keys to a waiter that is gone (and
      // take back keys given to us meanwhile).
      if ((queue !== undefined && (attempt > 0 || reserved)) || takeBack)
        await this.sendRelease(this.nodes, keys, value, timing.nodeTimeout, {
          name: queue?.name,
          leave: true,
        });
      throw error;
    } finally {
      stopExpecting?.();
    }
  }

  /**
   * Waits until the wait strategy says to try again; returns the lock when
   * a quorum of nodes gave us the key meanwhile.
   */
  private async awaitTurn(
    names: string[],
    keys: string[],
    value: string,
    timing: ResolvedTiming,
    queue: QueuePlace | undefined,
    context: Pick<
      WaitContext,
      'attempt' | 'remaining' | 'holderTtl' | 'signal'
    >,
  ): Promise<Lock | undefined> {
    const { signal } = context;
    // quit() ran or the caller aborted while our attempt was out: give up
    // now rather than wait (the caller's reason first, as everywhere).
    const stopped = this.stopReason(names, context.attempt, signal);
    if (stopped !== undefined) throw stopped;
    let given = 0;
    try {
      await this.waitStrategy.wait({
        ...context,
        keys,
        retryDelay: timing.retryDelay,
        retryJitter: timing.retryJitter,
        value,
      });
    } catch (error) {
      throw signal?.aborted ? abortReason(signal) : error;
    } finally {
      // This wait's notes are ours to read once, whatever happens next.
      given = this.releases.takeGiven(value);
    }
    // quit() woke us (a lock now could not even be released), or the
    // caller aborted. The caller's clean-up takes back a key given to us
    // meanwhile, as it does when the caller gave up.
    const stop = this.stopReason(names, context.attempt, signal);
    if (stop !== undefined) throw stop;
    return queue && this.transferred(names, keys, value, timing, given, queue);
  }

  /**
   * One attempt, no waiting. Resolves `null` when the resources are held by
   * someone else; rejects with `LockNotAcquiredError` when fewer than a quorum
   * of nodes answered, or they answered too late (an infrastructure failure
   * must not look like "busy"), and with reason `closed` once `quit()` ran
   * (a lock granted while it ran is taken back).
   */
  async tryAcquire(
    resources: string | string[],
    options?: AcquireOptions,
  ): Promise<Lock | null> {
    const names = normalizeResources(resources);
    const timing = this.resolveTiming(options);
    const keys = names.map((r) => this.keyOf(r));
    const fencing = this.resolveFencing(options);
    const signal = checkSignalOption(options?.signal);
    // As acquire(): borrowed clients stay open after quit(), and a lock
    // taken now could not even be released.
    const stop = this.stopReason(names, 0, signal);
    if (stop !== undefined) throw stop;
    // A release of this process held back for whoever asks next: ours, as
    // for acquire() (the key is still on the nodes, so an attempt would
    // find it busy).
    const line = localLine(keys, fencing);
    const adopted = this.localQueue.takeLingering(line, Math.ceil(timing.ttl));
    if (adopted) {
      this.localQueue.hold(line, adopted);
      return adopted;
    }
    const attempt = this.tryOnce(names, keys, timing, fencing, signal);
    this.active.set(attempt, timing.nodeTimeout);
    try {
      return await attempt;
    } finally {
      this.active.delete(attempt);
    }
  }

  private async tryOnce(
    names: string[],
    keys: string[],
    timing: ResolvedTiming,
    fencing: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Lock | null> {
    const value = randomValue();
    const result = await this.attempt(names, keys, value, timing, fencing);
    if (result.lock) {
      const stop = this.stopReason(names, 1, signal);
      if (stop === undefined) return result.lock;
      // Granted while quit() ran (the caller could not release it) or after
      // the caller gave up: take the keys back, while the connections are
      // open.
      await this.sendRelease(this.nodes, keys, value, timing.nodeTimeout, {
        leave: true,
      });
      throw stop;
    }
    if (result.reason === 'busy') return null;
    throw this.notAcquired(names, 1, result);
  }

  /**
   * Acquires, runs `fn(lock)` while the watchdog keeps the lock alive,
   * then releases it, also when `fn` throws (its error propagates unchanged).
   * If the lock was lost meanwhile, rejects with `LockLostError` carrying
   * `fn`'s outcome, unless `onLockLost` is `'ignore'`.
   */
  async using<T>(
    resources: string | string[],
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    checkRunOptions(options);
    const lock = await this.acquire(resources, options);
    return this.hold(lock, fn, options);
  }

  /** Runs `fn` under an acquired lock with a watchdog, then releases it (see {@link using}). */
  async hold<T>(
    lock: Lock,
    fn: (lock: Lock) => T | Promise<T>,
    options?: RunOptions,
  ): Promise<T> {
    checkRunOptions(options);
    const stopWatchdog = this.keepAlive.watch(lock, {
      maxHold: options?.maxHold,
      onLost: (error) => this.logger.warn(error.message),
    });
    let outcome: PromiseSettledResult<T>;
    try {
      outcome = { status: 'fulfilled', value: await fn(lock) };
    } catch (error) {
      outcome = { status: 'rejected', reason: error };
    }
    stopWatchdog();
    await lock.release();
    if (
      lock.signal.aborted &&
      (options?.onLockLost ?? REDLOCK_DEFAULTS.onLockLost) === 'throw'
    ) {
      throw (lock.signal.reason as LockLostError).withOutcome(outcome);
    }
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  }

  /**
   * Keeps a lock you acquired yourself alive, as `using()` does: extended
   * every third of its lease (with every other watched lock of this
   * instance, in one pipeline per node) until the returned function is
   * called, the lock is released or lost, or `maxHold` is reached. On loss,
   * `lock.signal` aborts and `onLost` is called once.
   */
  watch(lock: Lock, options?: WatchdogOptions): () => void {
    checkWatchdogOptions(options);
    return this.keepAlive.watch(lock, options);
  }

  /**
   * Resolves `true` once a quorum of nodes is connected, or `false` after
   * `timeoutMs` (it never rejects: nodes may come up later, and locks work
   * as soon as a quorum answers). Until then, an acquire would spend its
   * node timeout on connecting, and a single attempt (`tryAcquire`) right
   * after start-up could fail as `unreachable`. Clients the library
   * created and has not connected yet (`lazyConnect`) start connecting
   * here. `RedlockModule` awaits it while the application initialises.
   * `quit()` ends a pending wait with `false`.
   */
  ready(timeoutMs = 5000): Promise<boolean> {
    requireNonNegative('timeoutMs', timeoutMs);
    // With a restart quarantine, a node is ready once its uptime is read.
    const connected = () =>
      !this.closed &&
      this.nodes.filter(
        (n, i) => n.client.status === 'ready' && this.quarantine.checked(i),
      ).length >= this.quorum;
    if (this.closed) return Promise.resolve(false);
    connectOwned(this.nodes);
    if (connected()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        for (const node of this.nodes) node.client.off('ready', check);
        this.quarantine.checkedListeners.delete(check);
        this.readyWaits.delete(done);
        resolve(connected());
      };
      const check = () => {
        if (connected()) done();
      };
      const timer = setTimeout(done, timeoutMs);
      for (const node of this.nodes) node.client.on('ready', check);
      this.quarantine.checkedListeners.add(check);
      this.readyWaits.add(done);
    });
  }

  /**
   * PINGs every node and reports whether a quorum answered within
   * `timeoutMs` (default `HEALTH_TIMEOUT_MS`, 1 s), with each node's
   * latency or error: for readiness probes (see the README's terminus
   * example). Never rejects; a frozen node costs the timeout. After
   * `quit()`, every node is reported down (`closed`), also borrowed clients
   * that are still open.
   */
  health(timeoutMs: number = HEALTH_TIMEOUT_MS): Promise<RedlockHealth> {
    requirePositive('timeoutMs', timeoutMs);
    if (this.closed)
      return Promise.resolve({
        healthy: false,
        up: 0,
        quorum: this.quorum,
        nodes: this.nodes.map((n) => ({
          node: n.name,
          up: false,
          error: 'closed',
        })),
      });
    return checkHealth(this.nodes, this.quorum, timeoutMs, (i) =>
      this.quarantine.counts(i),
    );
  }

  /**
   * Closes the clients the library created (borrowed clients are left
   * open) and the release listener's subscribers, after waiting acquires
   * gave up and attempts in flight took back what they were granted
   * (bounded by 40 node timeouts). Resolves once their
   * sockets are closed: nothing of this instance keeps the process alive
   * after it (a node that is down is not waited for; one that does not
   * answer QUIT has its connection dropped after 1 s).
   */
  async quit(): Promise<void> {
    this.closed = true;
    for (const done of [...this.readyWaits]) done();
    this.keepAlive.stop();
    // Acquires give up and leave the nodes' queues while the connections
    // are still open: a place left behind could still be given a key, held
    // for its whole lease by a process that is gone. Waiters are woken; an
    // attempt in flight ends, and takes back what it was granted, before
    // the connections close (a polling waiter, not woken, gives up at its
    // next attempt).
    this.localQueue.closeAll();
    this.releases.wakeAll();
    // Bounded all the same: an attempt and its clean-up are at most four
    // polls (the attempt, its fencing round, its take-back, and the
    // release that leaves the queues), each of at most BUSY_WAIT_LIMIT
    // node timeouts (nodes busy with a burst); with nodes down or hung,
    // a few node timeouts in all.
    // A loop, not Math.max(...): a burst may have more calls in flight
    // than a call may take arguments.
    let slowest = 0;
    for (const nodeTimeout of this.active.values())
      slowest = Math.max(slowest, nodeTimeout);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.active.keys()]),
      new Promise((resolve) => {
        timer = setTimeout(
          resolve,
          POLLS_PER_CALL * BUSY_WAIT_LIMIT * slowest + 50,
        );
      }),
    ]);
    clearTimeout(timer);
    // closeAll() sent the releases held back for an adopter; a renewal
    // for a caller closeAll() turned away ends in a release.
    await Promise.allSettled([...this.deferred]);
    // Queue places left for an acquire that will not come now.
    await this.reservations.close();
    await this.releases.close();
    this.quarantine.close();
    await closeNodes(this.nodes);
    // The polls' shared timer may still be armed for a deadline gone by.
    deadlines.unrefWhenIdle();
  }

  private async attempt(
    resources: string[],
    keys: string[],
    value: string,
    timing: ResolvedTiming,
    fencing = false,
    queue?: QueuePlace,
  ): Promise<Attempt> {
    const start = this.clock.now();
    const ttl = Math.ceil(timing.ttl);
    // With fencing, the acquire also reads each resource's token counter.
    const counters = fencing
      ? keys.map((key) => fenceCounterKey(this.metaPrefix, key))
      : undefined;
    const args = acquireArgs(
      value,
      ttl,
      this.metaPrefix,
      fencing,
      // Not waiting: no place; the queues never hold it.
      queue && packPlace(queue.life, queue.arrival, queue.name),
    );
    const scriptKeys = counters ? [...keys, ...counters] : keys;
    const answeredAt = queue?.answeredAt;
    const ballots = await poll(
      this.nodes,
      (node) => node.run(ACQUIRE_SCRIPT, scriptKeys, args),
      (reply, i) =>
        acquireReply(reply).granted ? this.quarantine.grant(i) : 'busy',
      timing.nodeTimeout,
      this.decided,
      {
        answered:
          answeredAt &&
          ((i) => (answeredAt[i] = Math.max(answeredAt[i] ?? start, start))),
        // A quorum reached later would leave no validity.
        limitMs: timing.ttl - timing.drift,
      },
    );
    const granted = ballots.filter((b) => b.outcome === 'granted').length;
    const validity = timing.ttl - (this.clock.now() - start) - timing.drift;
    let fencingFailure: LockFailureReason | undefined;
    if (granted >= this.quorum && validity > 0) {
      const lock = new Lock(
        this,
        resources,
        keys,
        value,
        timing.ttl,
        start + timing.ttl - timing.drift,
        queue?.name,
      );
      if (!counters) return { start, ballots, lock };
      // A second round, once the lock is held: see fencing.md.
      fencingFailure = await issueFencingTokens(
        this,
        lock,
        counters,
        ballots,
        timing.nodeTimeout,
      );
      if (!fencingFailure) return { start, ballots, lock };
    }
    // Not held: take back every grant, including grants whose reply was lost
    // (timeouts, errors, nodes still pending). A node that answered "busy"
    // ran a script that wrote nothing, so it is skipped.
    const maybeOurs = this.nodes.filter(
      (_, i) => ballots[i].outcome !== 'busy',
    );
    if (maybeOurs.length)
      await this.sendRelease(maybeOurs, keys, value, timing.nodeTimeout, {
        name: queue?.name,
        leave: queue === undefined,
        // Past the lease, what the nodes did not delete has expired.
        limitMs: start + timing.ttl - this.clock.now(),
      });
    const answered = ballots.filter(
      (b) => b.outcome === 'granted' || b.outcome === 'busy',
    ).length;
    const reason: LockFailureReason =
      fencingFailure ??
      (granted >= this.quorum
        ? 'expired'
        : answered < this.quorum
          ? 'unreachable'
          : 'busy');
    // No holderTtl: the key is free but queued waiters go first (no lease
    // to wait for).
    const ttls = ballots
      .filter((b) => b.outcome === 'busy')
      .map((b) => acquireReply(b.reply).holderTtl)
      .filter((ttl) => ttl !== undefined);
    return {
      start,
      ballots,
      reason,
      holderTtl: ttls.length ? Math.min(...ttls) : undefined,
    };
  }

  /**
   * A waiter whose key a quorum of nodes gave it outright on release (see
   * WAIT_QUEUE_LUA) holds the lock without asking again. Its validity must
   * start no later than each of those grants, on our clock. For node i, take
   * the send time of the latest attempt node i answered: if the grant came
   * after that attempt ran, it is later than the send time; if before, that
   * attempt found the key holding our value and set it again with our lease,
   * after the send time. Either way the key lives at least until send time +
   * lease (the take-back of a failed attempt leaves given keys, see the
   * release script). A node that answered none of our attempts gives no
   * such bound and is not counted.
   */
  private transferred(
    names: string[],
    keys: string[],
    value: string,
    timing: ResolvedTiming,
    given: number,
    { answeredAt, name }: QueuePlace,
  ): Lock | undefined {
    let votes = 0;
    let since = Infinity;
    answeredAt.forEach((at, i) => {
      if (!(given & nodeBit(i)) || !this.quarantine.counts(i)) return;
      votes++;
      since = Math.min(since, at);
    });
    if (votes < this.quorum) return undefined;
    const deadline = since + Math.ceil(timing.ttl) - timing.drift;
    if (deadline <= this.clock.now()) return undefined;
    const lock = new Lock(this, names, keys, value, timing.ttl, deadline, name);
    lock.waited = true;
    lock.waitedInRedis = true;
    return lock;
  }

  private count(waited: boolean): void {
    this.stats.acquired++;
    if (waited) this.stats.waited++;
  }

  /** Stops a poll once a quorum granted, or enough refused that no quorum is possible. */
  private readonly decided = (t: Tally): boolean =>
    t.granted >= this.quorum || t.granted + t.pending < this.quorum;

  /** @internal */
  async extendLock(lock: Lock, ttl: number | undefined): Promise<void> {
    const timing =
      ttl === undefined
        ? this.resolveTiming({ ttl: lock.ttl })
        : this.resolveTiming({ ttl });
    const start = this.clock.now();
    const ballots = await poll(
      this.nodes,
      (node) =>
        node.run(EXTEND_SCRIPT, lock.keys, [lock.value, Math.ceil(timing.ttl)]),
      (reply) => (reply === 1 ? 'granted' : 'busy'),
      timing.nodeTimeout,
      this.decided,
      { limitMs: timing.ttl - timing.drift },
    );
    const granted = ballots.filter((b) => b.outcome === 'granted').length;
    const failure = this.settleExtension(
      lock,
      granted,
      start,
      timing.ttl,
      this.clock.now(),
    );
    if (failure) throw new LockExtendError(lock.resources, failure, ballots);
    this.keepAlive.rescheduled(lock);
  }

  /** Until when a lease of `ttl` ms that nodes set after `start` is held, on our clock. */
  private leaseDeadline(start: number, ttl: number): number {
    return start + ttl - clockDrift(ttl, this.driftFactor);
  }

  /**
   * Applies the outcome of an extension sent at `start` with lease `ttl`:
   * with a quorum and validity left at `now`, the lock gets its new
   * deadline; otherwise it is lost (its signal aborts) and taken back from
   * the nodes that still hold it. Returns why it failed, if it did.
   */
  private settleExtension(
    lock: Lock,
    votes: number,
    start: number,
    ttl: number,
    now: number,
  ): string | undefined {
    const deadline = this.leaseDeadline(start, ttl);
    if (votes >= this.quorum && deadline > now) {
      lock.ttl = ttl;
      lock.deadline = deadline;
      return undefined;
    }
    const reason =
      votes >= this.quorum
        ? 'the quorum answered after the new validity ran out'
        : `only ${votes} of ${this.quorum} needed nodes still held the lock`;
    lock.markLost(`extension failed: ${reason}`);
    void lock.release();
    return reason;
  }

  /**
   * @internal The batched watchdog's extension: every lock by its own lease,
   * in one pipeline per node (extend-many script calls of up to
   * EXTEND_CHUNK locks each), quorum and validity counted per lock as in
   * `extendLock`. Locks that fail are marked lost and released.
   */
  async extendMany(all: readonly Lock[]): Promise<void> {
    const now = this.clock.now();
    const locks: Lock[] = [];
    for (const lock of all) {
      if (lock.isReleased || lock.isLost) continue;
      if (now >= lock.deadline)
        lock.markLost(
          'its validity ran out before the extension (was the process paused?)',
        );
      else locks.push(lock);
    }
    if (!locks.length) return;
    // Each lock's lease as sent, to settle with: an extension by hand that
    // settles meanwhile changes lock.ttl, not what these requests set.
    const leases = locks.map((lock) => lock.ttl);
    const chunks: { keys: string[]; args: (string | number)[] }[] = [];
    for (let i = 0; i < locks.length; i += EXTEND_CHUNK)
      chunks.push(
        extendManyArgs(
          locks.slice(i, i + EXTEND_CHUNK),
          leases.slice(i, i + EXTEND_CHUNK).map(Math.ceil),
        ),
      );
    const start = this.clock.now();
    // A big batch takes the node a little longer (1 ms per 100 locks), and
    // a late answer still counts while the validity lasts: wait up to half
    // the shortest validity left, at least the node timeout.
    let shortest = Infinity;
    for (const lock of locks)
      shortest = Math.min(shortest, lock.deadline - start);
    const timeout = Math.max(
      this.timing.nodeTimeout + locks.length / 100,
      shortest / 2,
    );
    const votes = new Uint16Array(locks.length);
    await Promise.all(
      this.nodes.map(async (node) => {
        const replies = await withTimeout(
          node.runPipeline(EXTEND_MANY_SCRIPT, chunks),
          timeout,
        ).catch(() => undefined);
        if (!replies) return;
        replies.forEach((reply, c) => {
          if (!Array.isArray(reply)) return;
          reply.forEach((ok, j) => {
            if (ok === 1) votes[c * EXTEND_CHUNK + j]++;
          });
        });
      }),
    );
    const end = this.clock.now();
    locks.forEach((lock, i) => {
      if (!lock.isReleased)
        this.settleExtension(lock, votes[i], start, leases[i], end);
    });
  }

  /** @internal */
  async releaseLock(lock: Lock): Promise<ReleaseResult> {
    const live = this.clock.now() < lock.deadline && !lock.isLost;
    const line = localLine(lock.keys, !!lock.fencingTokens);
    if (live) {
      if (this.handOver(lock, line))
        return { released: true, expired: false, handedOver: true, nodes: [] };
      if (this.linger(lock, line))
        return { released: true, expired: false, deferred: true, nodes: [] };
      if (this.mayRenew(lock, line))
        return this.awaitedByQuit(this.renewOrRelease(lock, line));
    }
    return this.releaseOnNodes(lock, line, live);
  }

  /** The renewal for the next caller (see `renewForNext`), or else the release. */
  private async renewOrRelease(
    lock: Lock,
    line: string,
  ): Promise<ReleaseResult> {
    return (
      (await this.renewForNext(lock, line)) ??
      this.releaseOnNodes(lock, line, true)
    );
  }

  /**
   * A release `quit()` must wait for before it closes the connections: one
   * that leaves late (held back, or after a renewal) would otherwise meet
   * closed connections and leave the keys until their lease ends.
   */
  private awaitedByQuit(
    release: Promise<ReleaseResult>,
  ): Promise<ReleaseResult> {
    this.deferred.add(release);
    const settled = () => this.deferred.delete(release);
    release.then(settled, settled);
    return release;
  }

  /**
   * Whether `lock`, released while a caller of this process waits for the
   * same lease but may not get it as it stands (the streak ended, or less
   * than half the lease is left), may be renewed for that caller instead of
   * released (see `renewForNext`): single-resource locks without fencing
   * whose nodes never made them wait (no other process seen competing).
   */
  private mayRenew(lock: Lock, line: string): boolean {
    return (
      this.localHandoff > 0 &&
      !this.closed &&
      !lock.waitedInRedis &&
      lock.keys.length === 1 &&
      !lock.fencingTokens &&
      this.localQueue.mayRenew(line, lock)
    );
  }

  /**
   * The end of an in-process handoff streak when, as far as this process
   * knows, nobody else wants the lock: the nodes renew the lease for the
   * next caller of this process (one round trip) unless another waiter is
   * queued on them, instead of a release and a new acquire (two round
   * trips, and one fresh key). The next caller gets the same value with
   * the renewed validity, and a new streak starts. Resolves `undefined`
   * when a quorum did not renew (another process waits, a node is down, or
   * the caller gave up meanwhile): then the lock is released as usual.
   */
  private async renewForNext(
    lock: Lock,
    line: string,
  ): Promise<ReleaseResult | undefined> {
    const ttl = Math.ceil(lock.ttl);
    const start = this.clock.now();
    const deadline = this.leaseDeadline(start, ttl);
    const ballots = await poll(
      this.nodes,
      (node) =>
        node.run(KEEP_SCRIPT, lock.keys, [
          lock.value,
          ttl,
          this.metaPrefix,
          lock.queueName ?? '',
        ]),
      (reply) => (reply === 1 ? 'granted' : 'busy'),
      this.timing.nodeTimeout,
      this.decided,
      // A renewal after the deadline would hold nothing.
      { limitMs: deadline - start },
    );
    const renewed = ballots.filter((b) => b.outcome === 'granted').length;
    if (
      renewed < this.quorum ||
      deadline <= this.clock.now() ||
      !this.localQueue.renewTo(line, lock, () => this.successor(lock, deadline))
    )
      return undefined;
    return {
      released: true,
      expired: false,
      handedOver: true,
      nodes: votesOf(ballots),
    };
  }

  /**
   * Releases a lock's keys on the nodes, then passes the local turn on.
   * `mayReserve`: the lock may take a queue place for this process's next
   * acquire (see `reserveFor`).
   */
  private releaseOnNodes(
    lock: Lock,
    line: string,
    mayReserve: boolean,
  ): Promise<ReleaseResult> {
    const reserve = mayReserve ? this.reserveFor(lock, line) : undefined;
    const release = this.releaseAndOffer(lock, line, reserve);
    // A release that queues a place must be over before quit() abandons
    // the reservations: offered later, its place would stay queued on the
    // nodes, with the connections closed under its clean-up, and could be
    // given the key for a whole lease.
    return reserve ? this.awaitedByQuit(release) : release;
  }

  private async releaseAndOffer(
    lock: Lock,
    line: string,
    reserve: Reservation | undefined,
  ): Promise<ReleaseResult> {
    const expired = this.clock.now() >= lock.deadline;
    // Settles once a quorum confirmed: a hung node costs nothing here, its
    // request stays queued on its connection and its key expires anyway.
    const ballots = await this.sendRelease(
      this.nodes,
      lock.keys,
      lock.value,
      this.timing.nodeTimeout,
      {
        name: lock.queueName,
        leave: true,
        decided: (t) => t.granted >= this.quorum,
        reserve,
      },
    );
    if (reserve) this.reservations.offer(reserve, ballots);
    const deleted = ballots.filter((b) => b.outcome === 'granted').length;
    // The next caller of this process waiting for these resources goes now.
    this.localQueue.leave(line, lock);
    return {
      released: deleted >= this.quorum,
      expired,
      nodes: votesOf(ballots),
    };
  }

  /**
   * A queue place for this process's next acquire of a contended
   * single-resource lock, taken by its release (see the release script and
   * `Reservations`): when the lock was waited for, or a caller of this
   * process waits for it now. Uncontended releases reserve nothing.
   */
  private reserveFor(lock: Lock, line: string): Reservation | undefined {
    if (
      // quit() ran: no acquire will come to take the place.
      this.closed ||
      lock.keys.length !== 1 ||
      lock.fencingTokens ||
      lock.queueName === undefined ||
      !(lock.waited || this.localQueue.hasWaiters(line))
    )
      return undefined;
    return this.reservations.draft(
      line,
      lock.keys,
      randomValue(),
      Math.ceil(lock.ttl),
      this.clock.now(),
    );
  }

  /**
   * In-process handoff: when another caller of this process waits for the
   * same resources, it gets the lease as it stands (same value, same keys,
   * same validity deadline) without a round trip; the releasing lock is
   * done with it. Only while at least half the lease is left (so the next
   * holder starts with real validity) and for `localHandoff` leases in a
   * row, passed within `LOCAL_HANDOFF_WINDOW_MS` of the first, after which
   * the lock goes back through Redis and waiters of other processes get
   * their chance.
   */
  private handOver(lock: Lock, line: string): boolean {
    return (
      this.mayPassOn(lock) &&
      this.localQueue.handOver(
        line,
        lock,
        this.localHandoff,
        this.clock.now(),
        () => this.successor(lock),
      )
    );
  }

  /**
   * The in-process handoff, to a caller that asks a moment after the
   * release instead of waiting already: a contended lock (one its caller
   * waited for) released while nobody of this process waits keeps its lease
   * until the event loop turns, for a caller that asks for the same
   * resources before then (typically the worker that released it, asking
   * again). It counts toward the same `localHandoff` streak. Without it,
   * each such release hands the key to a waiter of another process and
   * queues this one behind it: one cross-process handoff per critical
   * section. Nobody asked: the lock is released on the nodes at the end of
   * the turn.
   */
  private linger(lock: Lock, line: string): boolean {
    if (!lock.waited || this.closed || !this.mayPassOn(lock)) return false;
    return this.localQueue.linger(
      line,
      lock,
      this.localHandoff,
      this.clock.now(),
      // Asked for later in the turn, after synchronous work: still worth it?
      () => (this.halfLeft(lock) ? this.successor(lock) : undefined),
      () =>
        void this.awaitedByQuit(this.releaseOnNodes(lock, line, false)).then(
          (result) => this.reportDeferred(lock, result),
        ),
    );
  }

  /**
   * A held-back release has no caller left to read its result (`release()`
   * resolved with `deferred`), so a failure goes to the logger: the keys
   * stay until their lease ends, and other processes wait that long.
   */
  private reportDeferred(lock: Lock, result: ReleaseResult): void {
    if (result.released || result.expired) return;
    const deleted = result.nodes.filter((n) => n.outcome === 'granted');
    const failed = result.nodes
      .filter((n) => n.outcome !== 'granted' && n.outcome !== 'busy')
      .map((n) => `${n.node} ${n.outcome}`);
    this.logger.warn(
      `Held-back release of ${lock.resources.map((r) => `"${r}"`).join(', ')} reached ${deleted.length} of ${this.nodes.length} nodes (quorum ${this.quorum})` +
        (failed.length ? `; ${failed.join(', ')}` : '') +
        `: its keys stay until their lease (${Math.ceil(lock.ttl)} ms) ends`,
    );
  }

  /** Whether `lock`'s lease may pass to another caller of this process. */
  private mayPassOn(lock: Lock): boolean {
    // A fenced grant must carry a token above every earlier one: only a
    // round trip through the quorum can issue it.
    return (
      this.localHandoff > 0 &&
      !lock.fencingTokens &&
      !lock.isLost &&
      this.halfLeft(lock)
    );
  }

  /** At least half of `lock`'s lease is left: a lease passed on must be worth taking. */
  private halfLeft(lock: Lock): boolean {
    return lock.deadline - this.clock.now() >= lock.ttl / 2;
  }

  /**
   * The lock a caller of this process holds when `lock`'s lease passes to
   * it: valid until `deadline` (by default, as long as `lock`).
   */
  private successor(lock: Lock, deadline = lock.deadline): Lock {
    const next = new Lock(
      this,
      lock.resources,
      lock.keys,
      lock.value,
      lock.ttl,
      deadline,
      lock.queueName,
    );
    next.waited = true;
    next.waitedInRedis = lock.waitedInRedis;
    return next;
  }

  /**
   * Deletes a lock's keys where they still hold `value`. `leave`: the
   * caller is done, so it leaves the nodes' wait queues; a failed attempt
   * that will try again keeps its place.
   */
  private sendRelease(
    nodes: readonly RedlockNode[],
    keys: readonly string[],
    value: string,
    timeout: number,
    {
      name,
      leave,
      decided = () => false,
      reserve,
      limitMs,
    }: {
      /** The caller's name in the wait queues, if it waited in them. */
      name?: string;
      leave: boolean;
      decided?: (t: Tally) => boolean;
      /** See `PollOptions.limitMs`. */
      limitMs?: number;
      /** A place to queue in the caller's stead when the key goes on (see `reserveFor`). */
      reserve?: Reservation;
    },
  ): Promise<Ballot[]> {
    const args = releaseArgs(
      value,
      this.metaPrefix,
      name,
      leave,
      reserve &&
        packPlace(queueLife(this.timing), reserve.arrival, reserve.name),
    );
    return poll(
      nodes,
      (node) => node.run(RELEASE_SCRIPT, keys, args),
      (reply) => (releaseReply(reply).deleted > 0 ? 'granted' : 'busy'),
      timeout,
      decided,
      { limitMs },
    );
  }

  /**
   * Why a call must stop now, if it must: its caller aborted (the signal's
   * reason), or `quit()` ran. `undefined` to go on.
   */
  private stopReason(
    names: string[],
    attempts: number,
    signal: AbortSignal | undefined,
  ): Error | undefined {
    // Thrown as it is, whatever the caller aborted with.
    if (signal?.aborted) return abortReason(signal);
    return this.closed ? this.closedError(names, attempts) : undefined;
  }

  private closedError(
    resources: string[],
    attempts: number,
  ): LockNotAcquiredError {
    return new LockNotAcquiredError(resources, attempts, 'closed', [], 0);
  }

  private notAcquired(
    resources: string[],
    attempts: number,
    result: Attempt,
  ): LockNotAcquiredError {
    const retryAfter = result.holderTtl ?? this.timing.retryDelay;
    const nodes = votesOf(result.ballots);
    return new LockNotAcquiredError(
      resources,
      attempts,
      result.reason ?? 'busy',
      nodes,
      retryAfter,
    );
  }
}

/** The most polls one acquire makes after its last wait (see `quit()`). */
const POLLS_PER_CALL = 4;

/**
 * How long a waiter's place in the nodes' wait queues lives unless an
 * attempt renews it: twice its longest sleep between attempts, plus room
 * for a stalled event loop. Short, because a waiter that dies in the queue
 * may still be given a key for its whole lease until then (a live waiter
 * that overstays only loses its place, and asks again).
 */
function queueLife(timing: ResolvedTiming): number {
  return Math.ceil(
    2 * (timing.retryDelay + timing.retryJitter + timing.nodeTimeout) + 250,
  );
}

/** Resolves like `promise`, or rejects after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
