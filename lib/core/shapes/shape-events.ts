import type { RedlockContext } from '../context.js';
import { channels, valueHash, type LockShape } from '../events/channels.js';
import { votesOf, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';

/**
 * What a semaphore's or read/write lock's attempt tells the `attempt`
 * channel, as a mutex's does: noted while the poll runs only when someone
 * listens (each node's answer time).
 */
export class AttemptEvent {
  private readonly latencies: (number | undefined)[];
  private readonly start: number;

  /** `undefined` when nobody listens to the `attempt` channel. */
  static open(ctx: RedlockContext): AttemptEvent | undefined {
    return channels.attempt.hasSubscribers ? new AttemptEvent(ctx) : undefined;
  }

  private constructor(private readonly ctx: RedlockContext) {
    this.latencies = new Array<number | undefined>(ctx.nodes.length);
    this.start = ctx.clock.now();
  }

  /** The poll's `answered` option: node `i` answered now. */
  readonly answered = (i: number): void => {
    this.latencies[i] ??= this.ctx.clock.now() - this.start;
  };

  /** Publishes the attempt's outcome. */
  publish(
    resources: readonly string[],
    value: string,
    ballots: readonly Ballot[],
    shape: LockShape,
  ): void {
    channels.attempt.publish({
      resources,
      valueHash: valueHash(value),
      granted: countGranted(ballots) >= this.ctx.quorum,
      durationMs: this.ctx.clock.now() - this.start,
      nodes: votesOf(ballots),
      latenciesMs: this.latencies,
      ...shape,
    });
  }
}

/** Tells the `wait` channel that a refused semaphore or read/write acquire waits. */
export function publishWait(
  resources: readonly string[],
  attempt: number,
  remainingMs: number,
  holderTtlMs: number | undefined,
  shape: LockShape,
): void {
  if (channels.wait.hasSubscribers)
    channels.wait.publish({
      resources,
      attempt,
      remainingMs,
      holderTtlMs,
      ...shape,
    });
}
