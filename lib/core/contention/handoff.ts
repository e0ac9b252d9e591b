import type { ContentionHost, ContentionParts } from './host.js';
import {
  channels,
  valueHash,
  type HandoverMessage,
} from '../events/channels.js';
import { createLock, type Lock, type ReleaseResult } from '../lock.js';

// The in-process handoff: a lease that passes between callers of one
// process without a round trip to the nodes. LocalQueue keeps the lines;
// these are the instance's rules for when a lease may pass.

/**
 * When another caller of this process waits for the same resources, it
 * gets the lease as it stands (same value, same keys, same validity
 * deadline) without a round trip; the releasing lock is done with it. Only
 * while at least half the lease is left (so the next holder starts with
 * real validity) and for `localHandoff` leases in a row, passed within
 * `LOCAL_HANDOFF_WINDOW_MS` of the first, after which the lock goes back
 * through Redis and waiters of other processes get their chance.
 */
export function handOver(
  c: ContentionParts,
  lock: Lock,
  line: string,
): boolean {
  return (
    mayPassOn(c, lock) &&
    c.queue.handOver(
      line,
      lock,
      c.host.config.localHandoff,
      c.host.clock.now(),
      () => passedOn(successor(c, lock), 'queue'),
    )
  );
}

/**
 * The handoff to a caller that asks a moment after the release instead of
 * waiting already: a contended lock (one its caller waited for) released
 * while nobody of this process waits keeps its lease until the event loop
 * turns, for a caller that asks for the same resources before then
 * (typically the worker that released it, asking again). It counts toward
 * the same `localHandoff` streak. Without it, each such release hands the
 * key to a waiter of another process and queues this one behind it: one
 * cross-process handoff per critical section. If nobody asks,
 * `releaseLater` sends the release at the end of the turn.
 */
export function linger(
  c: ContentionParts,
  lock: Lock,
  line: string,
  releaseLater: (c: ContentionParts, lock: Lock, line: string) => void,
): boolean {
  if (!lock.waited || c.host.closed || !mayPassOn(c, lock)) return false;
  return c.queue.linger(
    line,
    lock,
    c.host.config.localHandoff,
    c.host.clock.now(),
    // Asked for later in the turn, after synchronous work: still worth it?
    () =>
      halfLeft(c, lock) ? passedOn(successor(c, lock), 'lingering') : undefined,
    () => releaseLater(c, lock, line),
  );
}

/**
 * Whether `lock`, released while a caller of this process waits for the
 * same lease but may not get it as it stands (the streak ended, or less
 * than half the lease is left), may be renewed for that caller instead of
 * released (see `renewForNext`): single-resource locks without fencing
 * whose nodes never made them wait (no other process seen competing).
 */
export function mayRenew(
  c: ContentionParts,
  lock: Lock,
  line: string,
): boolean {
  return (
    c.host.config.localHandoff > 0 &&
    !c.host.closed &&
    !lock.waitedInRedis &&
    lock.keys.length === 1 &&
    !lock.fencingTokens &&
    c.queue.mayRenew(line, lock)
  );
}

/**
 * The lock a caller of this process holds when `lock`'s lease passes to
 * it: valid until `deadline` (by default, as long as `lock`).
 */
export function successor(
  c: ContentionParts,
  lock: Lock,
  deadline = lock.deadline,
): Lock {
  return createLock(c.host.lockOps, {
    resources: lock.resources,
    keys: lock.keys,
    value: lock.value,
    ttl: lock.ttl,
    deadline,
    queueName: lock.queueName,
    waited: true,
    waitedInRedis: lock.waitedInRedis,
  });
}

/**
 * A held-back release has no caller left to read its result (`release()`
 * resolved with `deferred`), so a failure goes to the logger: the keys
 * stay until their lease ends, and other processes wait that long.
 */
export function reportDeferred(
  host: ContentionHost,
  lock: Lock,
  result: ReleaseResult,
): void {
  if (result.released || result.expired) return;
  const deleted = result.nodes.filter((n) => n.outcome === 'granted');
  const failed = result.nodes
    .filter((n) => n.outcome !== 'granted' && n.outcome !== 'busy')
    .map((n) => `${n.node} ${n.outcome}`);
  host.logger.warn(
    `Held-back release of ${lock.resources.map((r) => `"${r}"`).join(', ')} reached ${deleted.length} of ${host.nodes.length} nodes (quorum ${host.quorum})` +
      (failed.length ? `; ${failed.join(', ')}` : '') +
      `: its keys stay until their lease (${Math.ceil(lock.ttl)} ms) ends`,
  );
}

/** Whether `lock`'s lease may pass to another caller of this process. */
function mayPassOn(c: ContentionParts, lock: Lock): boolean {
  // A fenced grant must carry a token above every earlier one: only a
  // round trip through the quorum can issue it.
  return (
    c.host.config.localHandoff > 0 &&
    !lock.fencingTokens &&
    !lock.isLost &&
    halfLeft(c, lock)
  );
}

/** At least half of `lock`'s lease is left: a lease passed on must be worth taking. */
function halfLeft(c: ContentionParts, lock: Lock): boolean {
  return lock.deadline - c.host.clock.now() >= lock.ttl / 2;
}

/** `next`, the lease that just passed within the process: told to the `handover` channel. */
export function passedOn(next: Lock, via: HandoverMessage['via']): Lock {
  if (channels.handover.hasSubscribers)
    channels.handover.publish({
      resources: next.resources,
      valueHash: valueHash(next.value),
      via,
      ...next.shape,
    });
  return next;
}
