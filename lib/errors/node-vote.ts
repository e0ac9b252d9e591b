/**
 * What one Redis node answered to one request of a lock operation.
 *
 * - `granted`: the node did what was asked (took, extended or released).
 * - `busy`: another holder's value is on the node (acquire), or our value is
 *   gone (extend).
 * - `timeout`: no answer within `nodeTimeout`.
 * - `pending`: no answer yet when the other nodes had decided the outcome
 *   (a quorum answered first); not a sign of trouble.
 * - `error`: the request failed (connection refused, closed, script error…).
 * - `quarantined`: the node granted, but it restarted less than
 *   `restartQuarantine` ago, or (with `clockMonitor`) its clock ran fast
 *   not long ago, so its grant does not count toward the quorum (and is
 *   taken back if the attempt fails).
 *
 * @publicApi
 */
export type NodeOutcome =
  'granted' | 'busy' | 'timeout' | 'pending' | 'error' | 'quarantined';

/**
 * One node's answer, named by `host:port` (never with credentials).
 *
 * @publicApi
 */
export interface NodeVote {
  readonly node: string;
  readonly outcome: NodeOutcome;
  /** The error message, for `error`. */
  readonly error?: string;
}

/** Formats votes as `127.0.0.1:6379 busy, 127.0.0.1:6380 timeout` for messages. */
export function describeVotes(votes: readonly NodeVote[]): string {
  return votes
    .map((v) => `${v.node} ${v.outcome}${v.error ? ` (${v.error})` : ''}`)
    .join(', ');
}
