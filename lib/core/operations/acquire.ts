import { LockNotAcquiredError } from '../../errors/lock-not-acquired.error.js';
import type { AcquireOptions } from '../config/options.js';
import { queueLife } from '../config/timing.js';
import type { RedlockContext } from '../context.js';
import type { AcquireTrace } from './trace.js';
import type { Lock } from '../lock.js';
import { votesOf } from '../nodes/poll.js';
import { randomValue } from '../util/lock-value.js';
import { rejected } from '../util/rejected.js';
import type { QueuePlace } from '../contention/queue-place.js';
import { resolveCall, type AcquireCall } from './acquire-call.js';
import { attempt } from './attempt.js';
import { notAcquired } from './not-acquired.js';
import { attemptOnce, notAcquiredOnce } from './attempt-once.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import type { Waiter } from '../contention/transferred.js';
import { awaitTurn } from './await-turn.js';
import { sendRelease } from '../nodes/send-release.js';
import { closedError, stopReason } from './stop.js';

/**
 * See `Redlock.acquire`. Not an async function: a caller that finds its
 * line free goes straight to the nodes (see `attemptOnce` for why the
 * common path avoids async layers).
 */
export function acquire(
  ctx: RedlockContext,
  resources: string | string[],
  options?: AcquireOptions,
  trace?: AcquireTrace,
): Promise<Lock> {
  try {
    const call = resolveCall(ctx.config, resources, options);
    const stop = stopReason(ctx, call.resources, 0, call.signal);
    if (stop !== undefined) return Promise.reject(stop);
    const giveUpAt = ctx.clock.now() + call.timing.waitTimeout;
    // Callers of this process for the same resources take turns: only the
    // one whose turn it is talks to Redis. A free line is ours at once.
    if (ctx.contention.open(call.line))
      return inTurn(ctx, call, giveUpAt, false, trace);
    return afterLocalTurn(ctx, call, giveUpAt, trace);
  } catch (error) {
    return rejected(error);
  }
}

/** An acquire that waits for its turn behind callers of this process. */
async function afterLocalTurn(
  ctx: RedlockContext,
  call: AcquireCall,
  giveUpAt: number,
  trace: AcquireTrace | undefined,
): Promise<Lock> {
  const { timing, signal, line } = call;
  // A caller that does not wait learns the outcome of an attempt of this
  // process still out (settled within a node timeout) rather than guess:
  // identical requests get one answer.
  const turn = await ctx.contention.enter(
    line,
    Math.ceil(timing.ttl),
    timing.waitTimeout,
    signal,
    timing.nodeTimeout,
  );
  if (turn.kind === 'handed') {
    // The previous holder in this process handed its lease over.
    ctx.contention.hold(line, turn.lock);
    ctx.held.add(turn.lock);
    count(ctx, true);
    return turn.lock;
  }
  if (turn.kind === 'timedOut') {
    if (ctx.closed) throw closedError(call.resources, 0);
    const holder = ctx.contention.holderOf(line);
    throw new LockNotAcquiredError(
      call.resources,
      0,
      'busy',
      [],
      // The holder may still be acquiring: it will hold for a `ttl`.
      holder?.remaining() || timing.ttl,
    );
  }
  return inTurn(ctx, call, giveUpAt, true, trace);
}

/**
 * The acquire of the caller whose turn it is: one attempt, or attempts
 * and waits. Holds the line with the lock, or leaves it.
 */
function inTurn(
  ctx: RedlockContext,
  call: AcquireCall,
  giveUpAt: number,
  queuedLocally: boolean,
  trace: AcquireTrace | undefined,
): Promise<Lock> {
  const { timing, line } = call;
  let acquiring: Promise<Lock>;
  try {
    acquiring =
      timing.waitTimeout === 0
        ? attemptOnce(ctx, call, trace, notAcquiredOnce)
        : acquireInTurn(ctx, call, giveUpAt, trace);
  } catch (error) {
    ctx.contention.leave(line);
    return rejected(error);
  }
  ctx.active.set(acquiring, timing.nodeTimeout);
  return acquiring.then(
    (lock) => {
      ctx.active.delete(acquiring);
      ctx.held.add(lock);
      count(ctx, queuedLocally || lock.waited);
      ctx.contention.hold(line, lock);
      return lock;
    },
    (error: unknown) => {
      ctx.active.delete(acquiring);
      ctx.contention.leave(line);
      throw error;
    },
  );
}

/** The acquire of the caller whose turn it is in this process: attempts and waits. */
async function acquireInTurn(
  ctx: RedlockContext,
  call: AcquireCall,
  giveUpAt: number,
  trace: AcquireTrace | undefined,
): Promise<Lock> {
  const { resources, keys, timing, fencing, signal, line } = call;
  // Only waiters that listen for release messages take a place in the
  // nodes' queues: a polling waiter named head would be told in vain.
  // A release may give the key outright only to a single-resource lock
  // without fencing (lease > 0 in its name, see transferred()).
  const waits = timing.waitTimeout > 0 && ctx.contention.listens;
  const lease = keys.length === 1 && !fencing ? Math.ceil(timing.ttl) : 0;
  // A place the release of our previous lock took for us (see the release
  // script): adopt it instead of asking to be queued.
  const reserved =
    waits && lease > 0
      ? ctx.contention.takeReservation(line, lease)
      : undefined;
  const value = reserved?.value ?? randomValue();
  const queue: QueuePlace | undefined = waits
    ? {
        life: queueLife(timing),
        arrival: reserved?.arrival ?? Date.now(),
        name: reserved?.name ?? ctx.contention.member(value, lease),
        answeredAt: reserved ? ctx.nodes.map(() => reserved.sentAt) : [],
        refusedAt: [],
      }
    : undefined;
  const waiter: Waiter = { resources, keys, value, timing, queue };
  let attempts = 0;
  let takeBack = false;
  // A key given to us while an attempt is still out is heard all the
  // same, once this instance listens (its first wait subscribes).
  let stopExpecting = queue && ctx.contention.expect(keys, value);
  try {
    if (reserved && queue && reserved.placed >= ctx.quorum) {
      // quit() or an abort in the turn between acquire()'s own check
      // and here: no lock from the adopted place (the clean-up below
      // gives it back). Attempts and waits check for themselves.
      const stop = stopReason(ctx, resources, attempts, signal);
      if (stop !== undefined) throw stop;
      // Queued on a quorum: the key went to the waiter before us there, so
      // an attempt could only be refused. Wait for our turn.
      const lock = reserved.heard
        ? ctx.contention.transferred(waiter, ctx.contention.takeGiven(value))
        : await awaitTurn(ctx, waiter, {
            attempt: attempts,
            remaining: giveUpAt - ctx.clock.now(),
            signal,
          });
      if (lock) return lock;
      stopExpecting ??= ctx.contention.expect(keys, value);
    }
    for (;;) {
      const stop = stopReason(ctx, resources, attempts, signal);
      if (stop !== undefined) throw stop;
      attempts++;
      const result = await attempt(
        ctx,
        resources,
        keys,
        value,
        timing,
        fencing,
        queue,
        giveUpAt + timing.nodeTimeout,
        call.shape,
      );
      if (trace) {
        trace.attempts = attempts;
        trace.nodes = votesOf(result.ballots);
      }
      if (result.lock) {
        // Granted while quit() ran (a lock now could not even be
        // released) or after the caller gave up: the clean-up below
        // takes the keys back.
        const stop = stopReason(ctx, resources, attempts, signal);
        if (stop !== undefined) {
          takeBack = true;
          throw stop;
        }
        result.lock.waited = attempts > 1 || reserved !== undefined;
        // A place reserved on no node: nobody was queued at the release.
        result.lock.waitedInRedis = attempts > 1 || !!reserved?.placed;
        return result.lock;
      }
      // Timers fire on whole milliseconds, and may fire up to one early:
      // less than a millisecond left is none (a wait that short would make
      // a second attempt at the end).
      const remaining = giveUpAt - ctx.clock.now();
      if (remaining < 1)
        throw notAcquired(ctx, resources, attempts, result, timing.ttl);
      ctx.stats.retries++;
      const lock = await awaitTurn(ctx, waiter, {
        attempt: attempts,
        remaining,
        holderTtl: result.holderTtl,
        signal,
      });
      if (lock) return lock;
      if (queue) stopExpecting ??= ctx.contention.expect(keys, value);
    }
  } catch (error) {
    // Gave up (timeout, abort, outage, quit()): leave the nodes' wait
    // queues, or releases would give keys to a waiter that is gone (and
    // take back keys given to us meanwhile). Awaited within what is left
    // of `waitTimeout` plus one node timeout, so that a node that does not
    // answer does not hold the caller past that bound; `quit()` waits for
    // the rest.
    if ((queue !== undefined && (attempts > 0 || reserved)) || takeBack)
      await awaitedByQuit(
        ctx,
        sendRelease(ctx, ctx.nodes, keys, value, timing.nodeTimeout, {
          name: queue?.name,
          leave: true,
          limitMs: Math.max(0, giveUpAt + timing.nodeTimeout - ctx.clock.now()),
        }),
      );
    throw error;
  } finally {
    stopExpecting?.();
  }
}

/** Counts an acquired lock in `Redlock.stats`. */
export function count(ctx: RedlockContext, waited: boolean): void {
  ctx.stats.acquired++;
  if (waited) ctx.stats.waited++;
}
