import type { RedlockConfig } from '../config/resolve.js';
import { poll, type Ballot, type Judgement, type Tally } from './poll.js';
import type { RedlockNode } from './redlock-node.js';
import { queueLife } from '../config/timing.js';
import {
  packPlace,
  RELEASE_SCRIPT,
  releaseArgs,
  releaseReply,
} from '../scripts/index.js';

/** How a release is sent (see {@link sendRelease}). */
export interface SendReleaseOptions {
  /** The caller's name in the wait queues, if it waited in them. */
  readonly name?: string;
  /** The caller is done: it leaves the nodes' wait queues. */
  readonly leave: boolean;
  /** Settles the poll early (a quorum confirmed); by default every node is heard. */
  readonly isDecided?: (tally: Tally) => boolean;
  /** See `PollOptions.limitMs`. */
  readonly limitMs?: number;
  /**
   * A place to queue in the caller's stead when the key goes on: a
   * reservation's rank and name (see `Reservations`).
   */
  readonly reserve?: { readonly arrival: number; readonly name: string };
}

const never = () => false;

/** A node that deleted a key of the lock confirms the release. */
const deletedAny = (reply: unknown): Judgement =>
  releaseReply(reply).deleted > 0 ? 'granted' : 'busy';

/**
 * Deletes a lock's keys where they still hold `value`. `leave`: the caller
 * is done, so it leaves the nodes' wait queues; a failed attempt that will
 * try again keeps its place.
 */
export function sendRelease(
  ctx: { readonly config: RedlockConfig },
  nodes: readonly RedlockNode[],
  keys: readonly string[],
  value: string,
  timeout: number,
  { name, leave, isDecided = never, reserve, limitMs }: SendReleaseOptions,
): Promise<Ballot[]> {
  const args = releaseArgs(
    value,
    ctx.config.metaPrefix,
    name,
    leave,
    reserve &&
      packPlace(queueLife(ctx.config.timing), reserve.arrival, reserve.name),
  );
  return poll(
    nodes,
    { script: RELEASE_SCRIPT, keys, args },
    deletedAny,
    timeout,
    isDecided,
    { limitMs },
  );
}
