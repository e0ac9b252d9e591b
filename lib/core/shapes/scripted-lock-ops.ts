import type { RedlockContext } from '../context.js';
import type { Lock, LockOperations, ReleaseResult } from '../lock.js';
import { poll, votesOf, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { extendOnNodes } from '../operations/extend.js';
import type { LuaScript, ScriptCall } from '../scripts/index.js';
import { channels } from '../events/channels.js';
import { traceExtend, traceRelease } from '../operations/trace.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { reportDeferred } from '../contention/handoff.js';

/** A script run, as a poll sends it to every node. */
export type ScriptRun = ScriptCall & { readonly script: LuaScript };

/** How a shape's locks are extended and released on one node. */
export interface ShapeScripts {
  /** Sets `lock`'s lease to `ms` where it is still ours (1: done, else 0). */
  extend(lock: Lock, ms: number): ScriptRun;
  /**
   * Deletes what `value` holds of `keys` (the lock keys): replies how many
   * resources it released. `takeBack`: a failed attempt's, which tells no
   * waiter (and a writer keeps its intent: it waits on).
   */
  release(keys: readonly string[], value: string, takeBack: boolean): ScriptRun;
}

/** Sends a release of `value` on `keys` to every node (also a failed attempt's take-back). */
export function sendScriptedRelease(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  keys: readonly string[],
  value: string,
  takeBack: boolean,
  limitMs?: number,
): Promise<Ballot[]> {
  return poll(
    ctx.nodes,
    scripts.release(keys, value, takeBack),
    (reply) => (Number(reply) > 0 ? 'granted' : 'busy'),
    ctx.config.timing.nodeTimeout,
    ctx.isDecided,
    limitMs === undefined ? undefined : { limitMs: Math.max(1, limitMs) },
  );
}

/** A release that passed the lease to another caller of this process: no node asked. */
const HANDED_OVER: ReleaseResult = {
  released: true,
  expired: false,
  handedOver: true,
  nodes: [],
};

/** A release that kept the lease for a caller of this process that may ask before the loop turns. */
const DEFERRED: ReleaseResult = {
  released: true,
  expired: false,
  deferred: true,
  nodes: [],
};

/**
 * What a release may do before it goes to the nodes: pass the lease to a
 * caller of this process that waits for it (`passOn`, true when one took
 * it), or keep it until the event loop turns for one that may ask
 * (`linger`, true when kept; `releaseLater` then sends the release if
 * nobody did).
 */
export interface LocalRelease {
  passOn(lock: Lock): boolean;
  linger(lock: Lock, releaseLater: () => Promise<unknown>): boolean;
}

/**
 * What a semaphore's or read/write lock's `Lock` calls back: its shape's
 * own extend, release and let-expire scripts. A release first offers the
 * lease to callers of this process (`local`); otherwise it goes to the
 * nodes, and then `wake` tells the waiters of this process, which ask the
 * nodes.
 */
export function scriptedLockOperations(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  wake: (lock: Lock) => void,
  local?: LocalRelease,
): LockOperations {
  const after = (lock: Lock) => (result: ReleaseResult) => {
    wake(lock);
    return result;
  };
  const toNodes = (lock: Lock) =>
    awaitedByQuit(ctx, release(ctx, scripts, lock)).then(after(lock));
  const decide = (lock: Lock): Promise<ReleaseResult> => {
    if (ctx.closed || !local) return toNodes(lock);
    if (local.passOn(lock)) return Promise.resolve(HANDED_OVER);
    const kept = local.linger(lock, () =>
      toNodes(lock).then((result) => reportDeferred(ctx, lock, result)),
    );
    return kept ? Promise.resolve(DEFERRED) : toNodes(lock);
  };
  // Each under its TracingChannel as a mutex's is (the lock's shape is
  // in its messages).
  return {
    clock: ctx.clock,
    extendLock: (lock, ttl) => {
      const run = () => extend(ctx, scripts, lock, ttl);
      return channels.extend.hasSubscribers
        ? traceExtend(lock, ttl, run)
        : run();
    },
    releaseLock: (lock) => {
      ctx.held.delete(lock);
      const run = () => decide(lock);
      return channels.release.hasSubscribers ? traceRelease(lock, run) : run();
    },
    leaveLock: (lock, ms) => {
      ctx.held.delete(lock);
      return awaitedByQuit(ctx, leave(ctx, scripts, lock, ms)).then(
        after(lock),
      );
    },
  };
}

async function release(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  lock: Lock,
): Promise<ReleaseResult> {
  const expired = ctx.clock.now() >= lock.deadline;
  const ballots = await sendScriptedRelease(
    ctx,
    scripts,
    lock.keys,
    lock.value,
    false,
  );
  return {
    released: countGranted(ballots) >= ctx.quorum,
    expired,
    nodes: votesOf(ballots),
  };
}

/** See `Lock.letExpire`: the lease cut to `ms`, nothing deleted. */
async function leave(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  lock: Lock,
  ms: number,
): Promise<ReleaseResult> {
  const expired = ctx.clock.now() >= lock.deadline;
  const ballots = await poll(
    ctx.nodes,
    scripts.extend(lock, Math.ceil(ms)),
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

/** See `Lock.extend` (as `extendLock` for a mutex, with the shape's script). */
async function extend(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  lock: Lock,
  ttl: number | undefined,
): Promise<void> {
  await extendOnNodes(ctx, lock, ttl, (ms) => scripts.extend(lock, ms));
}
