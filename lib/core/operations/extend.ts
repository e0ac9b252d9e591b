import { LockExtendError } from '../../errors/lock-extend.error.js';
import { callTiming } from '../config/resolve.js';
import { leaseDeadline } from '../config/timing.js';
import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';
import {
  poll,
  type Ballot,
  type PollRequest,
  type Tally,
} from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { ClusterNode } from '../cluster/cluster-node.js';
import { EXTEND_MANY_SCRIPT, EXTEND_SCRIPT } from '../scripts/index.js';
import { withTimeout } from '../util/timeout.js';
import { batchAll, batchBySlot, type ExtendBatch } from './extend-batch.js';
import {
  recreateMissing,
  untilAllAnswered,
  type Recreation,
} from './recreate.js';

/**
 * See `Lock.extend`: the lease set again on every node that holds our
 * value. With `recreateOnExtend`, once the extension stood, a second round
 * puts the keys back on the nodes that refused (see `recreateMissing`).
 */
export async function extendLock(
  ctx: RedlockContext,
  lock: Lock,
  ttl: number | undefined,
): Promise<void> {
  const { recreateOnExtend } = ctx.config;
  const ballots = await extendOnNodes(
    ctx,
    lock,
    ttl,
    (ms) => (node) => node.run(EXTEND_SCRIPT, lock.keys, [lock.value, ms]),
    recreateOnExtend ? untilAllAnswered(ctx.quorum) : ctx.isDecided,
  );
  if (recreateOnExtend) {
    // Nodes that answered and do not hold our value (restarted empty).
    const perNode = new Map<number, Recreation[]>();
    ballots.forEach((b, i) => {
      if (b.outcome === 'busy') perNode.set(i, [{ lock, ttl: lock.ttl }]);
    });
    if (perNode.size) {
      const { nodeTimeout } = callTiming(ctx.config, { ttl: lock.ttl }, '');
      await recreateMissing(ctx, perNode, nodeTimeout);
    }
  }
}

/**
 * One extension round of `lock` to `ttl` (its own lease when left out;
 * errors name `ttl`, the argument of `lock.extend(ttl)`): `request(ms)`
 * sets the lease on a node where the lock is still ours, answering 1. A
 * node whose clock ran fast may drop the key early: its extension does
 * not count (the restart quarantine's nodes do: see there). Settles the
 * lock (see `settleExtension`), throws `LockExtendError` when it did not
 * stand, and returns the ballots.
 */
export async function extendOnNodes(
  ctx: RedlockContext,
  lock: Lock,
  ttl: number | undefined,
  request: (ms: number) => PollRequest,
  isDecided: (tally: Tally) => boolean = ctx.isDecided,
): Promise<Ballot[]> {
  const timing = callTiming(
    ctx.config,
    { ttl: ttl === undefined ? lock.ttl : ttl },
    '',
  );
  const start = ctx.clock.now();
  const clocks = ctx.standing.clockMonitor;
  const ballots = await poll(
    ctx.nodes,
    request(Math.ceil(timing.ttl)),
    (reply, i) =>
      reply !== 1 ? 'busy' : clocks.counts(i) ? 'granted' : 'quarantined',
    timing.nodeTimeout,
    isDecided,
    { limitMs: timing.ttl - timing.drift },
  );
  const failure = settleExtension(
    ctx,
    lock,
    countGranted(ballots),
    start,
    timing.ttl,
    ctx.clock.now(),
  );
  if (failure) throw new LockExtendError(lock.resources, failure, ballots);
  ctx.keepAlive.rescheduled(lock);
  return ballots;
}

/**
 * Applies the outcome of an extension sent at `start` with lease `ttl`:
 * with a quorum and validity left at `now`, the lock gets its new
 * deadline; otherwise it is lost (its signal aborts) and taken back from
 * the nodes that still hold it. Returns why it failed, if it did.
 *
 * A quorum counted only once the lock's validity had run out proves
 * nothing: its keys may have expired meanwhile, been taken by another
 * holder, and been handed back to us by that holder's release (we keep
 * our place in the wait queues while we hold), so the extension would
 * join two holds with another holder's in between.
 */
export function settleExtension(
  ctx: RedlockContext,
  lock: Lock,
  votes: number,
  start: number,
  ttl: number,
  now: number,
): string | undefined {
  const deadline = leaseDeadline(start, ttl, ctx.config.driftFactor);
  const lapsed = now >= lock.deadline;
  if (votes >= ctx.quorum && deadline > now && !lapsed) {
    lock.ttl = ttl;
    lock.deadline = deadline;
    return undefined;
  }
  const reason = lapsed
    ? 'the quorum answered after the lock’s validity had run out'
    : votes >= ctx.quorum
      ? 'the quorum answered after the new validity ran out'
      : `only ${votes} of ${ctx.quorum} needed nodes still held the lock`;
  lock.markLost(`extension failed: ${reason}`);
  void lock.release();
  return reason;
}

/**
 * The batched watchdog's extension: every lock by its own lease, in one
 * pipeline per node (see `ExtendBatch`; on a Redis Cluster, one per
 * shard), quorum and validity counted per lock as in `extendLock`. Locks
 * that fail are marked lost and released; with `recreateOnExtend`, those
 * that stood are put back on the nodes that refused them.
 */
export async function extendMany(
  ctx: RedlockContext,
  all: readonly Lock[],
): Promise<void> {
  const now = ctx.clock.now();
  const locks: Lock[] = [];
  for (const lock of all) {
    if (lock.isReleased || lock.isLost) continue;
    if (now >= lock.deadline)
      lock.markLost(
        'its validity ran out before the extension (was the process paused?)',
      );
    else locks.push(lock);
  }
  if (!locks.length) return;
  // Each lock's lease as sent, to settle with: an extension by hand that
  // settles meanwhile changes lock.ttl, not what these requests set.
  const leases = locks.map((lock) => lock.ttl);
  const plain = batchAll(locks, leases);
  let bySlot: ExtendBatch | undefined;
  const start = ctx.clock.now();
  // A big batch takes the node a little longer (1 ms per 100 locks), and
  // a late answer still counts while the validity lasts: wait up to half
  // the shortest validity left, at least the node timeout.
  let shortest = Infinity;
  for (const lock of locks)
    shortest = Math.min(shortest, lock.deadline - start);
  const timeout = Math.max(
    ctx.config.timing.nodeTimeout + locks.length / 100,
    shortest / 2,
  );
  const votes = new Uint16Array(locks.length);
  const clocks = ctx.standing.clockMonitor;
  // With recreateOnExtend: per node, the locks it refused (see extendLock).
  const refused = ctx.config.recreateOnExtend
    ? new Map<number, number[]>()
    : undefined;
  await Promise.all(
    ctx.nodes.map(async (node, n) => {
      const batch =
        node instanceof ClusterNode
          ? (bySlot ??= batchBySlot(locks, leases))
          : plain;
      const replies = await withTimeout(
        node.runPipeline(EXTEND_MANY_SCRIPT, batch.calls),
        timeout,
      ).catch(() => undefined);
      if (!replies) return;
      const counted = clocks.counts(n);
      const oks = new Uint8Array(locks.length);
      replies.forEach((reply, c) => {
        if (!Array.isArray(reply)) return;
        reply.forEach((ok, j) => {
          const l = batch.owners[c][j];
          if (ok === 1) oks[l]++;
          else if (ok === 0 && refused) {
            if (!refused.has(n)) refused.set(n, []);
            refused.get(n)?.push(l);
          }
        });
      });
      if (counted)
        for (let l = 0; l < locks.length; l++)
          if (oks[l] === batch.parts[l]) votes[l]++;
    }),
  );
  const end = ctx.clock.now();
  const stood = locks.map(
    (lock, i) =>
      !lock.isReleased &&
      !settleExtension(ctx, lock, votes[i], start, leases[i], end),
  );
  if (!refused?.size) return;
  const perNode = new Map<number, Recreation[]>();
  for (const [n, ls] of refused) {
    const back = [...new Set(ls)]
      .filter((l) => stood[l])
      .map((l) => ({ lock: locks[l], ttl: leases[l] }));
    if (back.length) perNode.set(n, back);
  }
  await recreateMissing(ctx, perNode, timeout);
}
