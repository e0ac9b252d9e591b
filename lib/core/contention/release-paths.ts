import type { ContentionParts } from './host.js';
import { lineOf } from './line.js';
import { handOver, linger, mayRenew, reportDeferred } from './handoff.js';
import { renewForNext } from './renew-for-next.js';
import type { Lock, ReleaseResult } from '../lock.js';
import { votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { randomValue } from '../util/lock-value.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { rejected } from '../util/rejected.js';
import type { Reservation } from './reservations.js';
import { sendRelease } from '../nodes/send-release.js';

/**
 * What the release of `lock` does (see `Lock.release`): a live lock's lease
 * passes to the next caller of this process when one waits for it (or asks
 * before the event loop turns), or is renewed on the nodes for it;
 * otherwise its keys are deleted on the nodes, and a queue place may be
 * reserved for this process's next acquire.
 */
export function decideRelease(
  c: ContentionParts,
  lock: Lock,
): Promise<ReleaseResult> {
  // Not an async function: one that returns the release's promise cost
  // two more microtask turns per release. It still never throws.
  try {
    return decide(c, lock);
  } catch (error) {
    return rejected(error);
  }
}

function decide(c: ContentionParts, lock: Lock): Promise<ReleaseResult> {
  const line = lineOf(lock.keys, !!lock.fencingTokens);
  // Uncontended (nobody of this process waits for the line, and the lock
  // never waited): no handoff below applies, as each needs one or the
  // other, and nothing is reserved.
  if (!lock.waited && !c.queue.hasWaiters(line))
    return releaseAndOffer(c, lock, line, undefined);
  const live = c.host.clock.now() < lock.deadline && !lock.isLost;
  if (live) {
    if (handOver(c, lock, line))
      return Promise.resolve({
        released: true,
        expired: false,
        handedOver: true,
        nodes: [],
      });
    if (linger(c, lock, line, releaseHeldBack))
      return Promise.resolve({
        released: true,
        expired: false,
        deferred: true,
        nodes: [],
      });
    if (mayRenew(c, lock, line))
      return awaitedByQuit(c.host, renewOrRelease(c, lock, line));
  }
  return releaseOnNodes(c, lock, line, live);
}

/** The release of a lease held back for nobody (see `linger`), at the end of the turn. */
function releaseHeldBack(c: ContentionParts, lock: Lock, line: string): void {
  void awaitedByQuit(c.host, releaseOnNodes(c, lock, line, false)).then(
    (result) => reportDeferred(c.host, lock, result),
  );
}

/** The renewal for the next caller (see `renewForNext`), or else the release. */
async function renewOrRelease(
  c: ContentionParts,
  lock: Lock,
  line: string,
): Promise<ReleaseResult> {
  return (
    (await renewForNext(c, lock, line)) ?? releaseOnNodes(c, lock, line, true)
  );
}

/**
 * Releases a lock's keys on the nodes, then passes the local turn on.
 * `mayReserve`: the lock may take a queue place for this process's next
 * acquire (see `reserveFor`).
 */
function releaseOnNodes(
  c: ContentionParts,
  lock: Lock,
  line: string,
  mayReserve: boolean,
): Promise<ReleaseResult> {
  const reserve = mayReserve ? reserveFor(c, lock, line) : undefined;
  const release = releaseAndOffer(c, lock, line, reserve);
  // A release that queues a place must be over before quit() abandons
  // the reservations: offered later, its place would stay queued on the
  // nodes, with the connections closed under its clean-up, and could be
  // given the key for a whole lease.
  return reserve ? awaitedByQuit(c.host, release) : release;
}

/**
 * Sends the release, then offers the reserved place and lets the next
 * caller of this process go. Not an async function, for the reason
 * `attemptOnce` gives.
 */
function releaseAndOffer(
  c: ContentionParts,
  lock: Lock,
  line: string,
  reserve: Reservation | undefined,
): Promise<ReleaseResult> {
  const expired = c.host.clock.now() >= lock.deadline;
  // Settles once a quorum confirmed: a hung node costs nothing here, its
  // request stays queued on its connection and its key expires anyway.
  return sendRelease(
    c.host,
    c.host.nodes,
    lock.keys,
    lock.value,
    c.host.config.timing.nodeTimeout,
    {
      name: lock.queueName,
      leave: true,
      isDecided: (t) => t.granted >= c.host.quorum,
      reserve,
    },
  ).then((ballots) => {
    if (reserve) c.reservations.offer(reserve, ballots);
    // The next caller of this process waiting for these resources goes now.
    c.queue.leave(line, lock);
    return {
      released: countGranted(ballots) >= c.host.quorum,
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
  c: ContentionParts,
  lock: Lock,
  line: string,
): Reservation | undefined {
  if (
    // quit() ran: no acquire will come to take the place.
    c.host.closed ||
    lock.keys.length !== 1 ||
    lock.fencingTokens ||
    lock.queueName === undefined ||
    !(lock.waited || c.queue.hasWaiters(line))
  )
    return undefined;
  return c.reservations.draft(
    line,
    lock.keys,
    randomValue(),
    Math.ceil(lock.ttl),
    c.host.clock.now(),
  );
}
