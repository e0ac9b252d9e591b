import type { RedlockContext } from '../context.js';
import { lineOf } from '../handoff/line.js';
import {
  handOver,
  linger,
  mayRenew,
  reportDeferred,
} from '../handoff/pass-on.js';
import { renewForNext } from '../handoff/renew-for-next.js';
import type { Lock, ReleaseResult } from '../lock.js';
import { votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { randomValue } from '../util/lock-value.js';
import { rejected } from '../util/rejected.js';
import type { Reservation } from '../waiting/reservations.js';
import { sendRelease } from './send-release.js';

/**
 * See `Lock.release`. A live lock's lease passes to the next caller of
 * this process when one waits for it (or asks before the event loop
 * turns), or is renewed on the nodes for it; otherwise its keys are
 * deleted on the nodes.
 */
export function releaseLock(
  ctx: RedlockContext,
  lock: Lock,
): Promise<ReleaseResult> {
  // Not an async function: one that returns the release's promise cost
  // two more microtask turns per release. It still never throws.
  try {
    return release(ctx, lock);
  } catch (error) {
    return rejected(error);
  }
}

function release(ctx: RedlockContext, lock: Lock): Promise<ReleaseResult> {
  ctx.held.delete(lock);
  const line = lineOf(lock.keys, !!lock.fencingTokens);
  // Uncontended (nobody of this process waits for the line, and the lock
  // never waited): no handoff below applies, as each needs one or the
  // other, and nothing is reserved. A cold process compiled those checks.
  if (!lock.waited && !ctx.localQueue.hasWaiters(line))
    return releaseAndOffer(ctx, lock, line, undefined);
  const live = ctx.clock.now() < lock.deadline && !lock.isLost;
  if (live) {
    if (handOver(ctx, lock, line))
      return Promise.resolve({
        released: true,
        expired: false,
        handedOver: true,
        nodes: [],
      });
    if (linger(ctx, lock, line, releaseHeldBack))
      return Promise.resolve({
        released: true,
        expired: false,
        deferred: true,
        nodes: [],
      });
    if (mayRenew(ctx, lock, line))
      return awaitedByQuit(ctx, renewOrRelease(ctx, lock, line));
  }
  return releaseOnNodes(ctx, lock, line, live);
}

/** The release of a lease held back for nobody (see `linger`), at the end of the turn. */
function releaseHeldBack(ctx: RedlockContext, lock: Lock, line: string): void {
  void awaitedByQuit(ctx, releaseOnNodes(ctx, lock, line, false)).then(
    (result) => reportDeferred(ctx, lock, result),
  );
}

/** The renewal for the next caller (see `renewForNext`), or else the release. */
async function renewOrRelease(
  ctx: RedlockContext,
  lock: Lock,
  line: string,
): Promise<ReleaseResult> {
  return (
    (await renewForNext(ctx, lock, line)) ??
    releaseOnNodes(ctx, lock, line, true)
  );
}

/**
 * A release `quit()` must wait for before it closes the connections: one
 * that leaves late (held back, or after a renewal) would otherwise meet
 * closed connections and leave the keys until their lease ends.
 */
export function awaitedByQuit<T>(
  ctx: RedlockContext,
  release: Promise<T>,
): Promise<T> {
  ctx.deferred.add(release);
  const settled = () => ctx.deferred.delete(release);
  release.then(settled, settled);
  return release;
}

/**
 * Releases a lock's keys on the nodes, then passes the local turn on.
 * `mayReserve`: the lock may take a queue place for this process's next
 * acquire (see `reserveFor`).
 */
function releaseOnNodes(
  ctx: RedlockContext,
  lock: Lock,
  line: string,
  mayReserve: boolean,
): Promise<ReleaseResult> {
  const reserve = mayReserve ? reserveFor(ctx, lock, line) : undefined;
  const release = releaseAndOffer(ctx, lock, line, reserve);
  // A release that queues a place must be over before quit() abandons
  // the reservations: offered later, its place would stay queued on the
  // nodes, with the connections closed under its clean-up, and could be
  // given the key for a whole lease.
  return reserve ? awaitedByQuit(ctx, release) : release;
}

/**
 * Sends the release, then offers the reserved place and lets the next
 * caller of this process go. Not an async function, for the reason
 * `attemptOnce` gives.
 */
function releaseAndOffer(
  ctx: RedlockContext,
  lock: Lock,
  line: string,
  reserve: Reservation | undefined,
): Promise<ReleaseResult> {
  const expired = ctx.clock.now() >= lock.deadline;
  // Settles once a quorum confirmed: a hung node costs nothing here, its
  // request stays queued on its connection and its key expires anyway.
  return sendRelease(
    ctx,
    ctx.nodes,
    lock.keys,
    lock.value,
    ctx.config.timing.nodeTimeout,
    {
      name: lock.queueName,
      leave: true,
      isDecided: (t) => t.granted >= ctx.quorum,
      reserve,
    },
  ).then((ballots) => {
    if (reserve) ctx.reservations.offer(reserve, ballots);
    // The next caller of this process waiting for these resources goes now.
    ctx.localQueue.leave(line, lock);
    return {
      released: countGranted(ballots) >= ctx.quorum,
      expired,
      nodes: votesOf(ballots),
    };
  });
}

/**
 * A queue place for this process's next acquire of a contended
 * single-resource lock, taken by its release (see the release script and
 * `Reservations`): when the lock was waited for, or a caller of this
 * process waits for it now. Uncontended releases reserve nothing.
 */
function reserveFor(
  ctx: RedlockContext,
  lock: Lock,
  line: string,
): Reservation | undefined {
  if (
    // quit() ran: no acquire will come to take the place.
    ctx.closed ||
    lock.keys.length !== 1 ||
    lock.fencingTokens ||
    lock.queueName === undefined ||
    !(lock.waited || ctx.localQueue.hasWaiters(line))
  )
    return undefined;
  return ctx.reservations.draft(
    line,
    lock.keys,
    randomValue(),
    Math.ceil(lock.ttl),
    ctx.clock.now(),
  );
}
