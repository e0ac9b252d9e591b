import { describeVotes, type NodeVote } from './node-vote.js';
import { RedlockError } from './redlock.error.js';

/**
 * Why an acquire failed:
 * - `busy`: the resources are held by someone else (enough nodes answered).
 * - `unreachable`: fewer than a quorum of nodes answered at all; this is an
 *   infrastructure failure, not contention.
 * - `expired`: a quorum granted the lock, but it took longer than the lease
 *   (minus clock drift), so no validity was left; it was released again.
 * - `closed`: the `Redlock` instance was closed (`quit()`, application
 *   shutdown) before or while the acquire waited; it left the nodes' queues.
 *
 * @publicApi
 */
export type LockFailureReason = 'busy' | 'unreachable' | 'expired' | 'closed';

/**
 * The lock could not be acquired within the wait timeout. Maps to HTTP 409
 * Conflict, or 503 Service Unavailable when the nodes could not be reached
 * (both with `Retry-After`), in a Nest HTTP app.
 *
 * @publicApi
 */
export class LockNotAcquiredError extends RedlockError {
  /**
   * HTTP status a controller answers with: 409 Conflict when someone else
   * holds the resources (`busy`, `expired`), 503 Service Unavailable when
   * the lock service itself failed (`unreachable`, `closed`): a client
   * should retry both, but an outage is the server's problem, and monitors
   * that count 5xx should see it.
   */
  readonly statusCode: 409 | 503;

  constructor(
    /** The resources asked for (not prefixed). */
    readonly resources: readonly string[],
    /** How many attempts were made. */
    readonly attempts: number,
    /** Why the last attempt failed. */
    readonly reason: LockFailureReason,
    /** Each node's answer in the last attempt. */
    readonly nodes: readonly NodeVote[],
    /** A hint, in ms, of when trying again may succeed (the holder's remaining lease when known). */
    readonly retryAfter: number,
  ) {
    const names = resources.map((r) => `"${r}"`).join(', ');
    super(
      attempts === 0 && nodes.length === 0 && reason === 'busy'
        ? // Its turn never came in this process's queue: no node was asked.
          `Could not acquire lock on ${names}: held by another call in this process until the wait ended (no Redis node was asked)`
        : `Could not acquire lock on ${names} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ` +
            `${REASONS[reason]} [${describeVotes(nodes)}]`,
    );
    // An own field, not a getter: transports that serialise errors (RPC)
    // carry own fields only.
    this.statusCode =
      reason === 'unreachable' || reason === 'closed' ? 503 : 409;
  }
}

const REASONS: Record<LockFailureReason, string> = {
  busy: 'held by another holder',
  unreachable:
    'fewer than a quorum of Redis nodes answered (infrastructure failure, not contention)',
  expired: 'the quorum answered too late, no validity was left within the ttl',
  closed:
    'the Redlock instance was closed (quit()) before the lock was acquired',
};
