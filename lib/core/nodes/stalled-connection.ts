import type { RedlockNode } from './redlock-node.js';

/**
 * How long a node's oldest unanswered request may wait before its
 * connection counts as stalled, in ms (at least; see `stallAfter`).
 *
 * Across a silent partition (packets lost, nothing refused) the
 * connection stays open: the kernel keeps retransmitting with an
 * exponential backoff and nothing tells ioredis. After the partition
 * heals, the connection carries requests again only at the next
 * retransmission, which comes about as late as the partition lasted (up
 * to two minutes): acquires kept failing for seconds after a short one.
 * A fresh connection sends its SYN at once.
 */
export const STALL_MS = 2000;

/**
 * How long a client the library creates waits for a connection (TCP and
 * TLS handshakes) before it tries again: long enough for a distant node's
 * TLS handshake on a loaded host, short enough that a connection started
 * during a partition is retried soon after it heals.
 */
export const CONNECT_TIMEOUT_MS = 2000;

/** The longest pause between two connection attempts of a client the library creates. */
export const RECONNECT_DELAY_MAX_MS = 500;

/**
 * How long a node must have been silent before it counts as stalled:
 * `STALL_MS`, or the longest a poll waits for a node that answers
 * (`waitLimitMs`: 20 node timeouts, see `BUSY_WAIT_LIMIT`) when that is
 * longer, so that a node busy with a burst is never taken for a stalled
 * one while a poll would still wait for it.
 */
export function stallAfter(waitLimitMs: number): number {
  return Math.max(STALL_MS, waitLimitMs);
}

/**
 * Drops and reopens the connection of `node` (a client the library owns)
 * when it is stalled: its oldest unanswered request was sent at least
 * `stallAfter(waitLimitMs)` ago while the connection was ready, and
 * another node of `nodes` has since answered a request sent at least half
 * that time after it. The second condition keeps a pause of this process
 * (a blocked event loop, SIGSTOP) from counting: replies that arrived
 * meanwhile are read before any reply to a request sent after it. When
 * every node falls silent at once (this host lost its network) the
 * connections are left to the kernel.
 *
 * Requests still in flight on the dropped connection fail (the poll has
 * given up on them already); a lock key one of them set before the cut
 * stays on that node until its lease ends, as when a node's connection is
 * reset. Returns whether it reconnected.
 */
export function reconnectIfStalled(
  node: RedlockNode,
  nodes: readonly RedlockNode[],
  waitLimitMs: number,
  now: number,
): boolean {
  const since = node.quietSince;
  if (since === undefined || !node.owned) return false;
  const after = stallAfter(waitLimitMs);
  if (now - since < after) return false;
  let othersAnswer = false;
  for (const other of nodes)
    if (other !== node && other.answeredSentAt - since >= after / 2)
      othersAnswer = true;
  return othersAnswer && node.reconnect();
}
