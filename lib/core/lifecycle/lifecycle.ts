import { HEALTH_TIMEOUT_MS } from '../config/defaults.js';
import type { RedlockOptions } from '../config/options.js';
import { resolveRedlockConfig } from '../config/resolve.js';
import type { RedlockContext } from '../context.js';
import type { LockOperations } from '../lock.js';
import { closeNodes, connectOwned, createNodes } from './create-nodes.js';
import { checkHealth, type RedlockHealth } from '../nodes/health.js';
import { BUSY_WAIT_LIMIT } from '../nodes/poll.js';
import { quorumRule } from '../nodes/quorum.js';
import { ClockMonitor } from '../nodes/clock-monitor.js';
import { NodeStanding } from '../nodes/node-standing.js';
import { SameServerCheck } from '../nodes/same-server.js';
import { monotonicClock } from '../util/clock.js';
import { deadlines } from '../util/deadline-timer.js';
import { settledWithin } from '../util/timeout.js';
import { requireNonNegative, requirePositive } from '../util/validate.js';
import { KeepAlive } from '../watchdog/keep-alive.js';
import { extendAll } from '../shapes/extend-all.js';
import { HeldLocks } from '../held-locks.js';
import { Contention } from '../contention/contention.js';

/** The most polls one acquire makes after its last wait (see `quit`). */
const POLLS_PER_CALL = 4;

/**
 * Validates `options` and builds an instance's context: its nodes (clients
 * the library creates connect now, unless `lazyConnect`), the release
 * listener, the watchdog and the in-process queue. `lockOps` is what its
 * locks call back.
 */
export function openContext(
  options: RedlockOptions,
  lockOps: LockOperations,
): RedlockContext {
  const config = resolveRedlockConfig(options);
  const clock = options.clock ?? monotonicClock;
  const logger = options.logger ?? console;
  const nodes = createNodes(options.clients, config.closeClients);
  const { quorum } = config;
  const standing = new NodeStanding(
    nodes,
    config.restartQuarantine,
    clock,
    logger,
    new ClockMonitor(
      nodes,
      config.clockMonitor,
      config.driftFactor,
      clock,
      logger,
    ),
  );
  if (!config.lazyConnect) connectOwned(nodes);
  const base: Omit<RedlockContext, 'contention'> = {
    config,
    nodes,
    quorum,
    isDecided: quorumRule(quorum),
    clock,
    logger,
    keepAlive: new KeepAlive({
      now: () => clock.now(),
      // Read/write locks have an extension of their own.
      extendMany: (locks) => extendAll(ctx, locks),
    }),
    standing,
    sameServer: new SameServerCheck(nodes, logger),
    stats: { acquired: 0, waited: 0, retries: 0 },
    lockOps,
    closed: false,
    readyWaits: new Set(),
    active: new Map(),
    deferred: new Set(),
    held: new HeldLocks(),
    runs: new Set(),
  };
  // Contention serves the context it is part of.
  const ctx: RedlockContext = Object.assign(base, {
    contention: new Contention(base, options.waitStrategy),
  });
  if (nodes.length % 2 === 0) {
    logger.warn(
      `Redlock configured with an even number of nodes (${nodes.length}): it tolerates no more failures than ${nodes.length - 1} nodes would`,
    );
  }
  return ctx;
}

/** See `Redlock.ready`. */
export function ready(ctx: RedlockContext, timeoutMs = 5000): Promise<boolean> {
  requireNonNegative('timeoutMs', timeoutMs);
  const { nodes, standing } = ctx;
  // With a restart quarantine, a node is ready once its uptime is read.
  const connected = () =>
    !ctx.closed &&
    nodes.filter((n, i) => n.client.status === 'ready' && standing.checked(i))
      .length >= ctx.quorum;
  if (ctx.closed) return Promise.resolve(false);
  connectOwned(nodes);
  if (connected()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const node of nodes) node.client.off('ready', check);
      standing.checkedListeners.delete(check);
      ctx.readyWaits.delete(done);
      resolve(connected());
    };
    const check = () => {
      if (connected()) done();
    };
    const timer = setTimeout(done, timeoutMs);
    for (const node of nodes) node.client.on('ready', check);
    standing.checkedListeners.add(check);
    ctx.readyWaits.add(done);
  });
}

/** See `Redlock.health`. */
export function health(
  ctx: RedlockContext,
  timeoutMs: number = HEALTH_TIMEOUT_MS,
): Promise<RedlockHealth> {
  requirePositive('timeoutMs', timeoutMs);
  if (ctx.closed)
    return Promise.resolve({
      healthy: false,
      up: 0,
      quorum: ctx.quorum,
      nodes: ctx.nodes.map((n) => ({
        node: n.name,
        up: false,
        error: 'closed',
      })),
    });
  return checkHealth(
    ctx.nodes,
    ctx.quorum,
    timeoutMs,
    (i) => !ctx.standing.restarted(i),
    (i) => ctx.standing.clockMonitor.suspect(i),
  );
}

/** See `Redlock.quit`. A second call resolves with the first. */
export function quit(ctx: RedlockContext): Promise<void> {
  return (ctx.quitting ??= shutDown(ctx));
}

async function shutDown(ctx: RedlockContext): Promise<void> {
  ctx.closed = true;
  for (const done of [...ctx.readyWaits]) done();
  // Acquires give up and leave the nodes' queues while the connections
  // are still open: a place left behind could still be given a key, held
  // for its whole lease by a process that is gone. Waiters are woken; an
  // attempt in flight ends, and takes back what it was granted, before
  // the connections close (a polling waiter, not woken, gives up at its
  // next attempt).
  ctx.contention.stop();
  await settleActive(ctx);
  // Work under a lock may finish (the watchdog still extends its lock);
  // what is still held then is taken from it and released, so that other
  // processes get the keys now rather than when their lease ends.
  await drainRuns(ctx);
  await releaseHeld(ctx);
  ctx.keepAlive.stop();
  // closeAll() sent the releases held back for an adopter; a renewal
  // for a caller closeAll() turned away ends in a release.
  await Promise.allSettled([...ctx.deferred]);
  // Queue places left for an acquire that will not come now.
  await ctx.contention.close();
  ctx.standing.close();
  ctx.sameServer.close();
  await closeNodes(ctx.nodes);
  // The polls' shared timer may still be armed for a deadline gone by.
  deadlines.unrefWhenIdle();
}

/** Waits for the work running under a lock, for `shutdownTimeout` at most. */
async function drainRuns(ctx: RedlockContext): Promise<void> {
  if (ctx.runs.size > 0)
    await settledWithin(ctx.runs, ctx.config.shutdownTimeout);
}

/**
 * Releases every lock still held on the nodes (their waiters, in any
 * process, are told). Work still running under one is told first: its
 * lock's signal aborts, and its `run()` rejects with `LockLostError`.
 */
async function releaseHeld(ctx: RedlockContext): Promise<void> {
  const locks = ctx.held.takeAll();
  for (const lock of locks)
    lock.markLost(
      'the instance shut down (quit(), or the application closing) while it was held; it was released on the nodes',
    );
  await Promise.all(locks.map((lock) => lock.release()));
}

/**
 * Waits for the acquires in flight, bounded all the same: an attempt and
 * its clean-up are at most POLLS_PER_CALL polls (the attempt, its fencing
 * round, its take-back, and the release that leaves the queues), each of
 * at most BUSY_WAIT_LIMIT node timeouts (nodes busy with a burst); with
 * nodes down or hung, a few node timeouts in all.
 */
async function settleActive(ctx: RedlockContext): Promise<void> {
  // A loop, not Math.max(...): a burst may have more calls in flight
  // than a call may take arguments.
  let slowest = 0;
  for (const nodeTimeout of ctx.active.values())
    slowest = Math.max(slowest, nodeTimeout);
  await settledWithin(
    ctx.active.keys(),
    POLLS_PER_CALL * BUSY_WAIT_LIMIT * slowest + 50,
  );
}
