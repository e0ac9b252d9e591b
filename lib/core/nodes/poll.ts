import type { NodeOutcome, NodeVote } from '../../errors/node-vote.js';
import type { LuaScript, ScriptCall } from '../scripts/lua-script.js';
import { Deadline, deadlines } from '../util/deadline-timer.js';
import { rejected } from '../util/rejected.js';
import type { RedlockNode } from './redlock-node.js';
import { reconnectIfStalled } from './stalled-connection.js';

/**
 * What a poll sends each node: a script run (most polls), or any request.
 * A script run is passed as data rather than as a closure: the closure was
 * one more function for V8 to optimise, with the whole client's send path
 * inlined into it again (see docs/performance.md).
 */
export type PollRequest =
  | (ScriptCall & { readonly script: LuaScript })
  | ((node: RedlockNode) => Promise<unknown>);

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

/** Numbers the answers of every node (see `RedlockNode.lastAnswer`). */
let answerSequence = 0;

/** Optional settings of a {@link poll}. */
export interface PollOptions {
  /** Told of every node that answered, also after the poll settled. */
  readonly answered?: (index: number) => void;
  /**
   * The longest the poll may take, in ms, busy nodes included: the time
   * after which no answer could help (an acquire's or extension's lease,
   * less the drift, is over: a quorum granted later would hold nothing).
   * At most, and by default, `BUSY_WAIT_LIMIT` node timeouts.
   */
  readonly limitMs?: number;
}

/**
 * What a node's reply says: `quarantined` is a grant that does not count
 * toward the quorum (see `RestartQuarantine`); the tally counts it with
 * the failed nodes.
 */
export type Judgement = 'granted' | 'busy' | 'quarantined';

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
 * Settles as soon as `isDecided(tally)` says the outcome is known (for example
 * a quorum granted), or when every node answered, or after `timeoutMs`:
 * a hung node costs at most that, never blocks the others, and nodes that did
 * not answer in time are reported as `timeout`. The deadline is kept by the
 * timer all polls share (see `DeadlineTimer`).
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
 * validity counts from the attempt's start; and they bound it by their lease
 * (`limitMs`), past which a grant would be worthless.
 */
export function poll(
  nodes: readonly RedlockNode[],
  request: PollRequest,
  judge: (reply: unknown, index: number) => Judgement,
  timeoutMs: number,
  isDecided: (tally: Tally) => boolean,
  options?: PollOptions,
): Promise<Ballot[]> {
  // Every request is written before any bookkeeping: the writes of one
  // poll go out back to back (each costs a system call that wakes a node).
  const requests = new Array<Promise<unknown>>(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    try {
      requests[i] =
        typeof request === 'function'
          ? request(nodes[i])
          : nodes[i].run(request.script, request.keys, request.args);
    } catch (error) {
      requests[i] = rejected(error);
    }
  }
  const settled = new Promise<Ballot[]>(captureResolve);
  const run = new Poll(nodes, judge, timeoutMs, isDecided, options, captured);
  for (let i = 0; i < requests.length; i++)
    requests[i].then(
      (reply) => run.reply(i, reply),
      (error: unknown) => run.fail(i, error),
    );
  return settled;
}

/**
 * A promise's resolve function, taken without a closure per poll: the
 * executor runs at once, so `captured` is the new promise's until the next.
 */
let captured: (ballots: Ballot[]) => void = () => undefined;
function captureResolve(resolve: (ballots: Ballot[]) => void): void {
  captured = resolve;
}

/**
 * The state of one poll: an object with methods rather than a closure per
 * step, as this runs twice per lock and unlock on the sequential path.
 */
class Poll extends Deadline implements Tally {
  private readonly ballots: (Ballot | undefined)[];
  // The tally is the poll's own: `isDecided` reads it from the poll.
  granted = 0;
  busy = 0;
  failed = 0;
  pending: number;
  private done = false;
  /** Answers after this one (see `answerSequence`) are signs of life. */
  private checkedAfter = answerSequence;
  private readonly answered: ((index: number) => void) | undefined;
  /** When the poll settles at the latest (see `PollOptions.limitMs`). */
  private readonly end: number;
  /** When the requests were sent (`performance.now()`). */
  private readonly started: number;

  constructor(
    private readonly nodes: readonly RedlockNode[],
    private readonly judge: (reply: unknown, index: number) => Judgement,
    private readonly timeoutMs: number,
    private readonly isDecided: (tally: Tally) => boolean,
    options: PollOptions | undefined,
    private readonly resolve: (ballots: Ballot[]) => void,
  ) {
    super();
    this.ballots = new Array<Ballot | undefined>(nodes.length);
    this.pending = nodes.length;
    this.answered = options?.answered;
    const started = performance.now();
    this.started = started;
    for (let i = 0; i < nodes.length; i++) nodes[i].sent(started);
    const limit = BUSY_WAIT_LIMIT * timeoutMs;
    this.end =
      started +
      (options?.limitMs !== undefined
        ? Math.min(options.limitMs, limit)
        : limit);
    this.at = Math.min(started + timeoutMs, this.end);
    deadlines.add(this);
  }

  reply(i: number, reply: unknown): void {
    this.nodes[i].lastAnswer = ++answerSequence;
    this.nodes[i].answered(this.started);
    let outcome: Judgement;
    try {
      outcome = this.judge(reply, i);
    } catch (error) {
      // A reply nobody could read counts as a failed node, not as an
      // unhandled rejection.
      return this.fail(i, error);
    }
    this.record(i, { node: this.nodes[i].name, outcome, reply }, outcome);
  }

  fail(i: number, error: unknown): void {
    // An error reply is an answer; the client's own errors (a command
    // timeout, a closed connection) say nothing of the node's life.
    const node = this.nodes[i];
    if ((error as Error | undefined)?.name === 'ReplyError') {
      node.lastAnswer = ++answerSequence;
      node.answered(this.started);
    }
    this.record(
      i,
      { node: node.name, outcome: 'error', error: node.describeFailure(error) },
      'error',
    );
  }

  /** The node timeout passed (called by the shared timer). */
  fire(): void {
    // Decided after the loop's I/O phase, so that answers waiting on the
    // sockets count.
    setImmediate(() => this.decide());
  }

  private record(i: number, ballot: Ballot, outcome: NodeOutcome): void {
    if (outcome !== 'error') this.answered?.(i);
    if (this.done) return;
    this.ballots[i] = ballot;
    this.pending--;
    if (outcome === 'granted') this.granted++;
    else if (outcome === 'busy') this.busy++;
    else this.failed++;
    if (this.pending === 0 || this.isDecided(this)) this.finish(false);
  }

  /**
   * Past the node timeout: wait another node timeout while a pending
   * node answered something in the last one (see `poll`), or when the
   * client itself could not have heard it: its timer ran late by more
   * than half a node timeout (a burst kept the event loop busy sending
   * or parsing).
   */
  private decide(): void {
    if (this.done) return;
    const now = performance.now();
    const { nodes, timeoutMs } = this;
    if (now >= this.end) return this.finish(true);
    let wait = now - this.at > timeoutMs / 2;
    for (let i = 0; i < nodes.length && !wait; i++)
      wait =
        this.ballots[i] === undefined &&
        nodes[i].lastAnswer > this.checkedAfter;
    if (!wait) return this.finish(true);
    this.checkedAfter = answerSequence;
    this.at = Math.min(now + timeoutMs, this.end);
    deadlines.add(this);
  }

  /** Settles; nodes that did not answer timed out, or were still `pending` when the others decided. */
  private finish(timedOut: boolean): void {
    if (this.done) return;
    this.done = true;
    deadlines.delete(this);
    const { ballots, nodes } = this;
    let now: number | undefined;
    for (let i = 0; i < ballots.length; i++) {
      if (ballots[i] !== undefined) continue;
      // A node silent for long while others answer has a stalled
      // connection: reopened before its vote is read, so the vote says so.
      now ??= performance.now();
      reconnectIfStalled(
        nodes[i],
        nodes,
        BUSY_WAIT_LIMIT * this.timeoutMs,
        now,
      );
      ballots[i] = nodes[i].unanswered(timedOut);
    }
    this.resolve(ballots as Ballot[]);
  }
}
