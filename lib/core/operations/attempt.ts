import type { LockFailureReason } from '../../errors/lock-not-acquired.error.js';
import type { ResolvedTiming } from '../config/timing.js';
import type { RedlockContext } from '../context.js';
import {
  channels,
  tokensOf,
  traced,
  valueHash,
  type FenceMessage,
  type LockShape,
} from '../events/channels.js';
import { issueFencingTokens } from '../fencing/issue-tokens.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import { createLock, type Lock } from '../lock.js';
import { poll, votesOf, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import {
  ACQUIRE_SCRIPT,
  acquireArgs,
  acquireReply,
  packPlace,
} from '../scripts/index.js';
import type { QueuePlace } from '../contention/queue-place.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { sendRelease } from '../nodes/send-release.js';

/** The outcome of one acquire attempt. */
export interface AttemptResult {
  /** When it was sent (clock ms). */
  readonly start: number;
  readonly lock?: Lock;
  readonly reason?: LockFailureReason;
  readonly ballots: Ballot[];
  /** The holder's remaining lease, the shortest a busy node reported. */
  readonly holderTtl?: number;
}

/**
 * One attempt on every node at once: held with a quorum of grants within
 * the lease less the drift; otherwise every grant is taken back. With
 * fencing, a second round issues the tokens once the lock is held.
 * `queue`: the waiter's place in the nodes' wait queues, if it waits there.
 * `shape`: a semaphore's permit or a read/write side, for the events and
 * the lock (`undefined` for a mutex).
 *
 * Not an async function, and what only some attempts need (fencing, the
 * `attempt` channel, taking grants back) is in functions of its own: a
 * small hot path costs a fresh process less (docs/performance.md).
 */
export function attempt(
  ctx: RedlockContext,
  resources: readonly string[],
  keys: readonly string[],
  value: string,
  timing: ResolvedTiming,
  fencing = false,
  queue?: QueuePlace,
  settleBy = Infinity,
  shape?: LockShape,
): Promise<AttemptResult> {
  const { clock, config } = ctx;
  const start = clock.now();
  const ttl = Math.ceil(timing.ttl);
  // With fencing, the acquire also reads each resource's token counter.
  const counters = fencing
    ? keys.map((key) => fenceCounterKey(config.metaPrefix, key))
    : undefined;
  const args = acquireArgs(
    value,
    ttl,
    config.metaPrefix,
    fencing,
    // Not waiting: no place; the queues never hold it.
    queue && packPlace(queue.life, queue.arrival, queue.name),
  );
  const latencies = channels.attempt.hasSubscribers
    ? new Array<number | undefined>(ctx.nodes.length)
    : undefined;
  const sent: SentAttempt = {
    start,
    resources,
    keys,
    value,
    timing,
    counters,
    queue,
    latencies,
    settleBy,
    shape,
  };
  return poll(
    ctx.nodes,
    {
      script: ACQUIRE_SCRIPT,
      keys: counters ? [...keys, ...counters] : keys,
      args,
    },
    (reply, i) => {
      const { granted, refusedAt } = acquireReply(reply);
      // The answer to our latest attempt on node i says whether a key
      // given to us there earlier still stood (see transferred()).
      if (queue && start >= (queue.answeredAt[i] ?? -Infinity))
        queue.refusedAt[i] = granted ? undefined : (refusedAt ?? NaN);
      return granted ? ctx.standing.grant(i, keys) : 'busy';
    },
    timing.nodeTimeout,
    ctx.isDecided,
    {
      answered: queue || latencies ? (i) => answered(ctx, sent, i) : undefined,
      // A quorum reached later would leave no validity.
      limitMs: timing.ttl - timing.drift,
    },
  ).then((ballots) => settle(ctx, sent, ballots));
}

/** What an attempt sent, for the steps after its poll. */
interface SentAttempt {
  readonly start: number;
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly value: string;
  readonly timing: ResolvedTiming;
  readonly counters: string[] | undefined;
  readonly queue: QueuePlace | undefined;
  /** Each node's answer time, while the `attempt` channel has subscribers. */
  readonly latencies: (number | undefined)[] | undefined;
  /** When a failed attempt must have settled (clock ms): its caller's bound. */
  readonly settleBy: number;
  readonly shape: LockShape | undefined;
}

/** Notes node i's answer: for the wait queues, and for the `attempt` channel. */
function answered(ctx: RedlockContext, sent: SentAttempt, i: number): void {
  const { queue, latencies, start } = sent;
  if (queue)
    queue.answeredAt[i] = Math.max(queue.answeredAt[i] ?? start, start);
  if (latencies) latencies[i] ??= ctx.clock.now() - start;
}

/** Held or not, from the ballots: the lock, or the grants taken back. */
function settle(
  ctx: RedlockContext,
  sent: SentAttempt,
  ballots: Ballot[],
): AttemptResult | Promise<AttemptResult> {
  const { start, timing } = sent;
  const granted = countGranted(ballots);
  if (sent.latencies) publishAttempt(ctx, sent, ballots, granted);
  const validity = timing.ttl - (ctx.clock.now() - start) - timing.drift;
  if (granted < ctx.quorum || validity <= 0)
    return takeBack(ctx, sent, ballots, granted, undefined);
  const lock = createLock(ctx.lockOps, {
    resources: sent.resources,
    keys: sent.keys,
    value: sent.value,
    ttl: timing.ttl,
    deadline: start + timing.ttl - timing.drift,
    queueName: sent.queue?.name,
    shape: sent.shape,
  });
  if (!sent.counters) return { start, ballots, lock };
  return fenced(ctx, sent, ballots, granted, lock, sent.counters);
}

/** A held attempt's fencing round (see docs/fencing.md); a failed one is not held. */
async function fenced(
  ctx: RedlockContext,
  sent: SentAttempt,
  ballots: Ballot[],
  granted: number,
  lock: Lock,
  counters: string[],
): Promise<AttemptResult> {
  const fence = () =>
    issueFencingTokens(ctx, lock, counters, ballots, sent.timing.nodeTimeout);
  const failure = channels.fence.hasSubscribers
    ? await traceFence(lock, fence)
    : await fence();
  if (!failure) return { start: sent.start, ballots, lock };
  return takeBack(ctx, sent, ballots, granted, failure);
}

/**
 * An attempt not held: takes back every grant, including grants whose
 * reply was lost (timeouts, errors, nodes still pending). A node that
 * answered "busy" ran a script that wrote nothing, so it is skipped.
 * Awaited, so that a next attempt of the same value never meets it late
 * (on a Cluster a redirected request can overtake another), but only
 * until `settleBy`: a last attempt whose nodes do not answer would hold
 * the caller another node timeout past its `waitTimeout`, and no attempt
 * follows it. `quit()` waits for what is still out.
 */
async function takeBack(
  ctx: RedlockContext,
  sent: SentAttempt,
  ballots: Ballot[],
  granted: number,
  fencingFailure: LockFailureReason | undefined,
): Promise<AttemptResult> {
  const { start, timing, queue } = sent;
  const maybeOurs = ctx.nodes.filter((_, i) => ballots[i].outcome !== 'busy');
  if (maybeOurs.length) {
    const now = ctx.clock.now();
    await awaitedByQuit(
      ctx,
      sendRelease(ctx, maybeOurs, sent.keys, sent.value, timing.nodeTimeout, {
        name: queue?.name,
        leave: queue === undefined,
        // Past the lease, what the nodes did not delete has expired.
        limitMs: Math.min(start + timing.ttl, sent.settleBy) - now,
      }),
    );
  }
  return {
    start,
    ballots,
    reason: fencingFailure ?? failureReason(ctx.quorum, granted, ballots),
    holderTtl: shortestHolderTtl(ballots),
  };
}

/** Tells the `attempt` channel how an attempt went. */
function publishAttempt(
  ctx: RedlockContext,
  sent: SentAttempt,
  ballots: readonly Ballot[],
  granted: number,
): void {
  channels.attempt.publish({
    resources: sent.resources,
    valueHash: valueHash(sent.value),
    granted: granted >= ctx.quorum,
    durationMs: ctx.clock.now() - sent.start,
    nodes: votesOf(ballots),
    latenciesMs: sent.latencies,
    ...sent.shape,
  });
}

/** Why an attempt without a fencing failure was not held. */
export function failureReason(
  quorum: number,
  granted: number,
  ballots: readonly Ballot[],
): LockFailureReason {
  if (granted >= quorum) return 'expired';
  const answered = ballots.filter(
    (b) => b.outcome === 'granted' || b.outcome === 'busy',
  ).length;
  return answered < quorum ? 'unreachable' : 'busy';
}

/**
 * The shortest remaining lease the busy nodes reported; `undefined` when
 * none did (the key is free, but queued waiters go first: no lease to
 * wait for).
 */
export function shortestHolderTtl(
  ballots: readonly Ballot[],
): number | undefined {
  const ttls = ballots
    .filter((b) => b.outcome === 'busy')
    .map((b) => acquireReply(b.reply).holderTtl)
    .filter((ttl) => ttl !== undefined);
  return ttls.length ? Math.min(...ttls) : undefined;
}

/** Runs a fencing round under the `fence` TracingChannel. */
function traceFence(
  lock: Lock,
  fence: () => Promise<'expired' | 'unreachable' | undefined>,
): Promise<'expired' | 'unreachable' | undefined> {
  const message: FenceMessage = {
    resources: lock.resources,
    valueHash: valueHash(lock.value),
    ...lock.shape,
  };
  return traced(channels.fence, message, async () => {
    const failure = await fence();
    message.failure = failure;
    message.fencingTokens = tokensOf(lock.fencingTokens);
    return failure;
  });
}
