import { LockExtendError } from '../../errors/lock-extend.error.js';
import { callTiming } from '../config/resolve.js';
import type { LockMode } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { Lock, LockOperations, ReleaseResult } from '../lock.js';
import { poll, votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { settleExtension } from '../operations/extend.js';
import { RW_EXTEND_SCRIPT, RW_RELEASE_SCRIPT } from '../scripts/index.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { rwKeys } from './rw-keys.js';

/** The mode of each read/write lock handed out (the watchdog extends them one by one). */
export const rwModes = new WeakMap<Lock, LockMode>();

/**
 * What a read/write lock calls back: its own extend, release and
 * let-expire scripts (a reader's entry is a member of a set, not a key).
 * Released on the nodes at once: no in-process handoff (waiters of this
 * process are woken by `wake` and ask the nodes).
 */
export function rwLockOperations(
  ctx: RedlockContext,
  wake: (lock: Lock) => void,
): LockOperations {
  return {
    clock: ctx.clock,
    extendLock: (lock, ttl) => extendRw(ctx, lock, ttl),
    releaseLock: (lock) => {
      ctx.held.delete(lock);
      return awaitedByQuit(ctx, releaseRw(ctx, lock)).then((result) => {
        wake(lock);
        return result;
      });
    },
    leaveLock: (lock, ms) => {
      ctx.held.delete(lock);
      return awaitedByQuit(ctx, leaveRw(ctx, lock, ms)).then((result) => {
        wake(lock);
        return result;
      });
    },
  };
}

/** Sends a read/write release of `value` on `keys` to every node (also a failed attempt's take-back). */
export function sendRwRelease(
  ctx: RedlockContext,
  keys: readonly string[],
  value: string,
  keepIntent: boolean,
  limitMs?: number,
) {
  return poll(
    ctx.nodes,
    {
      script: RW_RELEASE_SCRIPT,
      keys: rwKeys(ctx.config.metaPrefix, keys),
      args: [value, keepIntent ? '1' : '0'],
    },
    (reply) => (Number(reply) > 0 ? 'granted' : 'busy'),
    ctx.config.timing.nodeTimeout,
    ctx.isDecided,
    limitMs === undefined ? undefined : { limitMs: Math.max(1, limitMs) },
  );
}

async function releaseRw(
  ctx: RedlockContext,
  lock: Lock,
): Promise<ReleaseResult> {
  const expired = ctx.clock.now() >= lock.deadline;
  const ballots = await sendRwRelease(ctx, lock.keys, lock.value, false);
  return {
    released: countGranted(ballots) >= ctx.quorum,
    expired,
    nodes: votesOf(ballots),
  };
}

async function leaveRw(
  ctx: RedlockContext,
  lock: Lock,
  ms: number,
): Promise<ReleaseResult> {
  const expired = ctx.clock.now() >= lock.deadline;
  const ballots = await poll(
    ctx.nodes,
    {
      script: RW_EXTEND_SCRIPT,
      keys: rwKeys(ctx.config.metaPrefix, lock.keys),
      args: [lock.value, Math.ceil(ms)],
    },
    (reply) => (reply === 1 ? 'granted' : 'busy'),
    ctx.config.timing.nodeTimeout,
    ctx.isDecided,
  );
  return {
    released: false,
    expired,
    expiresIn: countGranted(ballots) >= ctx.quorum ? Math.ceil(ms) : undefined,
    nodes: votesOf(ballots),
  };
}

/** See `Lock.extend`, for a read or write lock (as `extendLock` for a mutex). */
async function extendRw(
  ctx: RedlockContext,
  lock: Lock,
  ttl: number | undefined,
): Promise<void> {
  const timing = callTiming(
    ctx.config,
    { ttl: ttl === undefined ? lock.ttl : ttl },
    '',
  );
  const start = ctx.clock.now();
  const clocks = ctx.standing.clockMonitor;
  const ballots = await poll(
    ctx.nodes,
    {
      script: RW_EXTEND_SCRIPT,
      keys: rwKeys(ctx.config.metaPrefix, lock.keys),
      args: [lock.value, Math.ceil(timing.ttl)],
    },
    (reply, i) =>
      reply !== 1 ? 'busy' : clocks.counts(i) ? 'granted' : 'quarantined',
    timing.nodeTimeout,
    ctx.isDecided,
    { limitMs: timing.ttl - timing.drift },
  );
  const failure = settleExtension(
    ctx,
    lock,
    countGranted(ballots),
    start,
    timing.ttl,
    ctx.clock.now(),
  );
  if (failure) throw new LockExtendError(lock.resources, failure, ballots);
  ctx.keepAlive.rescheduled(lock);
}
