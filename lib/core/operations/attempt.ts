import {
  LockNotAcquiredError,
  type LockFailureReason,
} from '../../errors/lock-not-acquired.error.js';
import type { ResolvedTiming } from '../config/timing.js';
import { createLock, type RedlockContext } from '../context.js';
import {
  channels,
  tokensOf,
  traced,
  valueHash,
  type FenceMessage,
} from '../events/channels.js';
import { issueFencingTokens } from '../fencing/issue-tokens.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import type { Lock } from '../lock.js';
import { poll, votesOf, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import {
  ACQUIRE_SCRIPT,
  acquireArgs,
  acquireReply,
  packPlace,
} from '../scripts/index.js';
import type { QueuePlace } from '../waiting/queue-place.js';
import { sendRelease } from './send-release.js';

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
 */
export async function attempt(
  ctx: RedlockContext,
  resources: readonly string[],
  keys: readonly string[],
  value: string,
  timing: ResolvedTiming,
  fencing = false,
  queue?: QueuePlace,
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
  const scriptKeys = counters ? [...keys, ...counters] : keys;
  const answeredAt = queue?.answeredAt;
  const observed = channels.attempt.hasSubscribers;
  const latencies = observed
    ? new Array<number | undefined>(ctx.nodes.length)
    : undefined;
  const ballots = await poll(
    ctx.nodes,
    (node) => node.run(ACQUIRE_SCRIPT, scriptKeys, args),
    (reply, i) => {
      const { granted, refusedAt } = acquireReply(reply);
      // The answer to our latest attempt on node i says whether a key
      // given to us there earlier still stood (see transferred()).
      if (queue && start >= (queue.answeredAt[i] ?? -Infinity))
        queue.refusedAt[i] = granted ? undefined : (refusedAt ?? NaN);
      return granted ? ctx.quarantine.grant(i, keys) : 'busy';
    },
    timing.nodeTimeout,
    ctx.isDecided,
    {
      answered:
        answeredAt || latencies
          ? (i) => {
              if (answeredAt)
                answeredAt[i] = Math.max(answeredAt[i] ?? start, start);
              if (latencies) latencies[i] ??= clock.now() - start;
            }
          : undefined,
      // A quorum reached later would leave no validity.
      limitMs: timing.ttl - timing.drift,
    },
  );
  const granted = countGranted(ballots);
  if (latencies)
    channels.attempt.publish({
      resources,
      valueHash: valueHash(value),
      granted: granted >= ctx.quorum,
      durationMs: clock.now() - start,
      nodes: votesOf(ballots),
      latenciesMs: latencies,
    });
  const validity = timing.ttl - (clock.now() - start) - timing.drift;
  let fencingFailure: LockFailureReason | undefined;
  if (granted >= ctx.quorum && validity > 0) {
    const lock = createLock(ctx, {
      resources,
      keys,
      value,
      ttl: timing.ttl,
      deadline: start + timing.ttl - timing.drift,
      queueName: queue?.name,
    });
    if (!counters) return { start, ballots, lock };
    // A second round, once the lock is held: see docs/fencing.md.
    const fence = () =>
      issueFencingTokens(ctx, lock, counters, ballots, timing.nodeTimeout);
    fencingFailure = channels.fence.hasSubscribers
      ? await traceFence(lock, fence)
      : await fence();
    if (!fencingFailure) return { start, ballots, lock };
  }
  // Not held: take back every grant, including grants whose reply was lost
  // (timeouts, errors, nodes still pending). A node that answered "busy"
  // ran a script that wrote nothing, so it is skipped.
  const maybeOurs = ctx.nodes.filter((_, i) => ballots[i].outcome !== 'busy');
  if (maybeOurs.length)
    await sendRelease(ctx, maybeOurs, keys, value, timing.nodeTimeout, {
      name: queue?.name,
      leave: queue === undefined,
      // Past the lease, what the nodes did not delete has expired.
      limitMs: start + timing.ttl - clock.now(),
    });
  return {
    start,
    ballots,
    reason: fencingFailure ?? failureReason(ctx.quorum, granted, ballots),
    holderTtl: shortestHolderTtl(ballots),
  };
}

/** Why an attempt without a fencing failure was not held. */
function failureReason(
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
function shortestHolderTtl(ballots: readonly Ballot[]): number | undefined {
  const ttls = ballots
    .filter((b) => b.outcome === 'busy')
    .map((b) => acquireReply(b.reply).holderTtl)
    .filter((ttl) => ttl !== undefined);
  return ttls.length ? Math.min(...ttls) : undefined;
}

/** The error of an acquire that gave up after `attempts`, from its last attempt. */
export function notAcquired(
  ctx: RedlockContext,
  resources: readonly string[],
  attempts: number,
  result: AttemptResult,
): LockNotAcquiredError {
  return new LockNotAcquiredError(
    resources,
    attempts,
    result.reason ?? 'busy',
    votesOf(result.ballots),
    result.holderTtl ?? ctx.config.timing.retryDelay,
  );
}

/** Runs a fencing round under the `fence` TracingChannel. */
function traceFence(
  lock: Lock,
  fence: () => Promise<'expired' | 'unreachable' | undefined>,
): Promise<'expired' | 'unreachable' | undefined> {
  const message: FenceMessage = {
    resources: lock.resources,
    valueHash: valueHash(lock.value),
  };
  return traced(channels.fence, message, async () => {
    const failure = await fence();
    message.failure = failure;
    message.fencingTokens = tokensOf(lock.fencingTokens);
    return failure;
  });
}
