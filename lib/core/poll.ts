import type { NodeOutcome, NodeVote } from '../errors/node-vote.js';
import type { RedlockNode } from './redlock-node.js';

/** One node's answer with the raw reply, for the operation to interpret. */
export interface Ballot extends NodeVote {
  readonly reply?: unknown;
}

/** Each node's vote as results and errors report it (the raw reply left out). */
export function votesOf(ballots: readonly Ballot[]): NodeVote[] {
  return ballots.map(({ node, outcome, error }) => ({ node, outcome, error }));
}

/**
 * How long, in node timeouts, a poll may wait for nodes that keep
 * answering other requests (busy, not down) before it reports them as
 * timed out.
 */
export const BUSY_WAIT_LIMIT = 20;

/** Counts of a poll so far. */
export interface Tally {
  granted: number;
  busy: number;
  failed: number;
  pending: number;
}

/**
 * Sends one request to every node at once and collects the answers.
 *
 * Settles as soon as `decided(tally)` says the outcome is known (for example
 * a quorum granted), or when every node answered, or after `timeoutMs`:
 * a hung node costs at most that, never blocks the others, and nodes that did
 * not answer in time are reported as `timeout`. One timer serves all nodes.
 *
 * A node that is still answering is busy, not down: past `timeoutMs`, the
 * poll waits another `timeoutMs` for a pending node that answered some
 * request (of any poll) in the last one, or when the client was too busy
 * to hear it, up to `BUSY_WAIT_LIMIT` node timeouts in all. A burst of thousands of requests
 * in one tick (locks released together at shutdown) takes a node longer
 * than the node timeout to work through, and without this every late
 * answer was reported as a failed node, though the node did the work. A
 * frozen or unreachable node stops answering, and is given up on within two
 * node timeouts of its last answer. Acquires lose nothing by the wait: their
 * validity counts from the attempt's start.
 */
export function poll(
  nodes: readonly RedlockNode[],
  send: (node: RedlockNode) => Promise<unknown>,
  judge: (reply: unknown) => 'granted' | 'busy',
  timeoutMs: number,
  decided: (tally: Tally) => boolean,
  /** Told of every node that answered, also after the poll settled. */
  answered?: (index: number) => void,
): Promise<Ballot[]> {
  return new Promise((resolve) => {
    const ballots: (Ballot | undefined)[] = new Array(nodes.length);
    const tally: Tally = {
      granted: 0,
      busy: 0,
      failed: 0,
      pending: nodes.length,
    };
    let done = false;
    const started = performance.now();
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(
        nodes.map(
          (node, i) => ballots[i] ?? { node: node.name, outcome: 'timeout' },
        ),
      );
    };
    const record = (i: number, ballot: Ballot, outcome: NodeOutcome) => {
      nodes[i].lastAnswerAt = performance.now();
      if (outcome !== 'error') answered?.(i);
      if (done) return;
      ballots[i] = ballot;
      tally.pending--;
      if (outcome === 'granted') tally.granted++;
      else if (outcome === 'busy') tally.busy++;
      else tally.failed++;
      if (tally.pending === 0 || decided(tally)) finish();
    };
    // Every request is written before any bookkeeping: the writes of one
    // poll go out back to back (each costs a system call that wakes a node).
    const requests = nodes.map((node) => {
      try {
        return send(node);
      } catch (error) {
        return Promise.reject(
          error instanceof Error ? error : new Error(String(error)),
        );
      }
    });
    // Past the node timeout: wait another node timeout while a pending
    // node answered something in the last one (see above), or when the
    // client itself could not have heard it: its timer ran late by more
    // than half a node timeout (a burst kept the event loop busy sending
    // or parsing). Decided after the loop's I/O phase, so that answers
    // waiting on the sockets count.
    let checkedAt = started;
    let dueAt = started + timeoutMs;
    const decide = () => {
      if (done) return;
      const now = performance.now();
      if (now - started >= BUSY_WAIT_LIMIT * timeoutMs) return finish();
      let wait = now - dueAt > timeoutMs / 2;
      for (let i = 0; i < nodes.length && !wait; i++)
        wait =
          ballots[i] === undefined && (nodes[i].lastAnswerAt ?? 0) > checkedAt;
      if (!wait) return finish();
      checkedAt = now;
      dueAt = now + timeoutMs;
      timer = setTimeout(expire, timeoutMs);
    };
    const expire = () => void setImmediate(decide);
    let timer = setTimeout(expire, timeoutMs);
    requests.forEach((request, i) => {
      const node = nodes[i];
      const failed = (error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        record(
          i,
          { node: node.name, outcome: 'error', error: message },
          'error',
        );
      };
      request.then((reply) => {
        let outcome: 'granted' | 'busy';
        try {
          outcome = judge(reply);
        } catch (error) {
          // A reply nobody could read counts as a failed node, not as an
          // unhandled rejection.
          return failed(error);
        }
        record(i, { node: node.name, outcome, reply }, outcome);
      }, failed);
    });
  });
}
