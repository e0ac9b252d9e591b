import type { ContentionParts } from './host.js';
import type { Lock, ReleaseResult } from '../lock.js';
import { poll, votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { KEEP_SCRIPT } from '../scripts/index.js';
import { leaseDeadline } from '../config/timing.js';
import { passedOn, successor } from './handoff.js';

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
export async function renewForNext(
  c: ContentionParts,
  lock: Lock,
  line: string,
): Promise<ReleaseResult | undefined> {
  const ttl = Math.ceil(lock.ttl);
  const start = c.host.clock.now();
  const deadline = leaseDeadline(start, ttl, c.host.config.driftFactor);
  const ballots = await poll(
    c.host.nodes,
    (node) =>
      node.run(KEEP_SCRIPT, lock.keys, [
        lock.value,
        ttl,
        c.host.config.metaPrefix,
        lock.queueName ?? '',
      ]),
    (reply) => (reply === 1 ? 'granted' : 'busy'),
    c.host.config.timing.nodeTimeout,
    c.host.isDecided,
    // A renewal after the deadline would hold nothing.
    { limitMs: deadline - start },
  );
  if (
    countGranted(ballots) < c.host.quorum ||
    deadline <= c.host.clock.now() ||
    !c.queue.renewTo(line, lock, () =>
      passedOn(successor(c, lock, deadline), 'renewal'),
    )
  )
    return undefined;
  return {
    released: true,
    expired: false,
    handedOver: true,
    nodes: votesOf(ballots),
  };
}
