import type { ResolvedTiming } from '../config/timing.js';
import { createLock, type RedlockContext } from '../context.js';
import { channels, valueHash } from '../events/channels.js';
import type { Lock } from '../lock.js';
import { abortReason } from '../util/abort.js';
import { nodeBit } from '../util/node-mask.js';
import type { GivenNotes, QueuePlace } from '../waiting/queue-place.js';
import type { WaitContext } from '../waiting/wait-strategy.js';
import { stopReason } from './stop.js';

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
 * Waits until the wait strategy says to try again; returns the lock when
 * a quorum of nodes gave us the key meanwhile.
 */
export async function awaitTurn(
  ctx: RedlockContext,
  waiter: Waiter,
  context: Pick<WaitContext, 'attempt' | 'remaining' | 'holderTtl' | 'signal'>,
): Promise<Lock | undefined> {
  const { signal } = context;
  const { resources, value, timing } = waiter;
  // quit() ran or the caller aborted while our attempt was out: give up
  // now rather than wait (the caller's reason first, as everywhere).
  const stopped = stopReason(ctx, resources, context.attempt, signal);
  if (stopped !== undefined) throw stopped;
  if (channels.wait.hasSubscribers)
    channels.wait.publish({
      resources,
      valueHash: valueHash(value),
      attempt: context.attempt,
      remainingMs: context.remaining,
      holderTtlMs: context.holderTtl,
    });
  let given: GivenNotes | undefined;
  try {
    await ctx.waitStrategy.wait({
      ...context,
      keys: waiter.keys,
      retryDelay: timing.retryDelay,
      retryJitter: timing.retryJitter,
      value,
    });
  } catch (error) {
    throw signal?.aborted ? abortReason(signal) : error;
  } finally {
    // This wait's notes are ours to read once, whatever happens next.
    given = ctx.releases.takeGiven(value);
  }
  // quit() woke us (a lock now could not even be released), or the
  // caller aborted. The caller's clean-up takes back a key given to us
  // meanwhile, as it does when the caller gave up.
  const stop = stopReason(ctx, resources, context.attempt, signal);
  if (stop !== undefined) throw stop;
  return waiter.queue && given && transferred(ctx, waiter, given);
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
  ctx: RedlockContext,
  { resources, keys, value, timing, queue }: Waiter,
  given: GivenNotes,
): Lock | undefined {
  if (!queue) return undefined;
  let votes = 0;
  let since = Infinity;
  queue.answeredAt.forEach((at, i) => {
    if (!(given.bits & nodeBit(i)) || !ctx.quarantine.counts(i, keys)) return;
    const refused = queue.refusedAt[i];
    if (refused !== undefined && !(given.at[i] > refused)) return;
    votes++;
    since = Math.min(since, at);
  });
  if (votes < ctx.quorum) return undefined;
  const deadline = since + Math.ceil(timing.ttl) - timing.drift;
  if (deadline <= ctx.clock.now()) return undefined;
  return createLock(ctx, {
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
