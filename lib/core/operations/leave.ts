import type { RedlockContext } from '../context.js';
import { lineOf } from '../contention/line.js';
import type { Lock, ReleaseResult } from '../lock.js';
import { poll, votesOf } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import { EXTEND_SCRIPT } from '../scripts/index.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';

/**
 * See `Lock.letExpire`: the lease cut to `ms` on every node that holds our
 * value, and the lock let go here without deleting its keys. They expire
 * by themselves, also when this process stops or closes: `quit()` does not
 * release such a lock, as the point is that nobody gets it sooner (a
 * rolling restart must not run a scheduled job twice in one tick). A node
 * that misses the cut keeps the longer lease: later, never sooner.
 */
export function leaveLock(
  ctx: RedlockContext,
  lock: Lock,
  ms: number,
): Promise<ReleaseResult> {
  ctx.held.delete(lock);
  const expired = ctx.clock.now() >= lock.deadline;
  const line = lineOf(lock.keys, !!lock.fencingTokens);
  const leaving = poll(
    ctx.nodes,
    (node) => node.run(EXTEND_SCRIPT, lock.keys, [lock.value, Math.ceil(ms)]),
    (reply) => (reply === 1 ? 'granted' : 'busy'),
    ctx.config.timing.nodeTimeout,
    ctx.isDecided,
  ).then((ballots) => {
    // The next caller of this process goes to the nodes, which refuse it
    // until the keys expire.
    ctx.contention.leave(line, lock);
    return {
      released: false,
      expired,
      expiresIn:
        countGranted(ballots) >= ctx.quorum ? Math.ceil(ms) : undefined,
      nodes: votesOf(ballots),
    };
  });
  return awaitedByQuit(ctx, leaving);
}
