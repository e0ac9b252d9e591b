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
    const timer = setTimeout(finish, timeoutMs);
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
