import type { ResolvedTiming } from '../config/timing.js';
import { createLock, type Lock } from '../lock.js';
import { nodeBit } from '../util/node-mask.js';
import type { ContentionHost } from './host.js';
import type { GivenNotes, QueuePlace } from './queue-place.js';

/** The key a waiting acquire asks for, and how it waits. */
export interface Waiter {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  /** The value it will hold its lock with. */
  readonly value: string;
  readonly timing: ResolvedTiming;
  /** Its place in the nodes' wait queues, if it takes one. */
  readonly queue: QueuePlace | undefined;
}

/**
 * A waiter whose key a quorum of nodes gave it outright on release (see
 * WAIT_QUEUE_LUA) holds the lock without asking again. Its validity must
 * start no later than each of those grants, on our clock. For node i, take
 * the send time of the latest attempt node i answered: if the grant came
 * after that attempt ran, it is later than the send time; if before, that
 * attempt found the key holding our value and set it again with our lease,
 * after the send time, unless it was refused: then the key had expired
 * (or was taken back) by the time it ran, and a grant before it is void.
 * The node said when a refusal ran and when it granted, on its own clock
 * (`refusedAt`, `given.at`): only a grant after the refusal counts (a
 * note can arrive long after it was sent, behind a paused process or a
 * stalled connection). Either way the key lives at least until send time +
 * lease (the take-back of a failed attempt leaves given keys, see the
 * release script). A node that answered none of our attempts gives no
 * such bound and is not counted. `given`: the nodes that gave the key and
 * when.
 */
export function transferred(
  host: ContentionHost,
  { resources, keys, value, timing, queue }: Waiter,
  given: GivenNotes,
): Lock | undefined {
  if (!queue) return undefined;
  let votes = 0;
  let since = Infinity;
  queue.answeredAt.forEach((at, i) => {
    if (!(given.bits & nodeBit(i)) || !host.standing.counts(i, keys)) return;
    const refused = queue.refusedAt[i];
    if (refused !== undefined && !(given.at[i] > refused)) return;
    votes++;
    since = Math.min(since, at);
  });
  if (votes < host.quorum) return undefined;
  const deadline = since + Math.ceil(timing.ttl) - timing.drift;
  if (deadline <= host.clock.now()) return undefined;
  return createLock(host.lockOps, {
    resources,
    keys,
    value,
    ttl: timing.ttl,
    deadline,
    queueName: queue.name,
    waited: true,
    waitedInRedis: true,
  });
}
