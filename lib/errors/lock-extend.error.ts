import { describeVotes, type NodeVote } from './node-vote.js';
import { RedlockError } from './redlock.error.js';

/**
 * `lock.extend()` failed: fewer than a quorum of nodes still held our value,
 * the lock's validity had already run out, or it was released. The lock must
 * be treated as lost.
 *
 * @publicApi
 */
export class LockExtendError extends RedlockError {
  constructor(
    readonly resources: readonly string[],
    /** What went wrong, in words. */
    readonly reason: string,
    /** Each node's answer, when the extension was sent. */
    readonly nodes: readonly NodeVote[] = [],
  ) {
    super(
      `Could not extend lock on ${resources.map((r) => `"${r}"`).join(', ')}: ${reason}` +
        (nodes.length ? ` [${describeVotes(nodes)}]` : ''),
    );
  }
}
