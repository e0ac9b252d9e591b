import type { Lock, ReleaseResult } from '../lock.js';
import type { ContentionHost, ContentionParts } from './host.js';
import type { TurnResult } from './line.js';
import { LocalQueue } from './local-queue.js';
import type { GivenNotes } from './queue-place.js';
import { ReleaseListener } from './release-listener.js';
import { decideRelease } from './release-paths.js';
import { sendRelease } from '../nodes/send-release.js';
import { Reservations, type Reservation } from './reservations.js';
import { transferred, type Waiter } from './transferred.js';
import type { WaitContext, WaitStrategy } from '../config/wait-strategy.js';
import { WakeOnRelease } from './wake-on-release.js';

/**
 * Everything about callers competing for the same resources, for one
 * `Redlock` instance: the in-process queue and its handoffs, the places in
 * the nodes' wait queues and the reservations a release takes, the release
 * messages and the waiters they wake, and what a release does. Operations
 * use it through these methods only (docs/development.md, "Contention").
 */
export class Contention implements ContentionParts {
  // Its parts (see ContentionParts), for the files of contention/; operations
  // use the methods below. Not tagged internal: the typings' stripInternal
  // would drop them, and the class would no longer implement ContentionParts.
  readonly queue = new LocalQueue();
  readonly listener: ReleaseListener;
  readonly reservations: Reservations;
  readonly strategy: WaitStrategy;

  constructor(
    readonly host: ContentionHost,
    strategy?: WaitStrategy,
  ) {
    const { nodes, config } = host;
    this.listener = new ReleaseListener(nodes, config.metaPrefix, host.quorum);
    this.strategy = strategy ?? new WakeOnRelease(this.listener);
    // An abandoned reservation leaves the queues of the nodes that may hold it.
    this.reservations = new Reservations(this.listener, (r) =>
      sendRelease(
        host,
        nodes.filter((_, i) => r.maybe[i]),
        r.keys,
        r.value,
        config.timing.nodeTimeout,
        { name: r.name, leave: true },
      ),
    );
  }

  // Turns: callers of this process for the same resources (a line) take
  // turns; only the one whose turn it is talks to the nodes.

  /** Takes the turn on `line` at once when nobody of this process holds or waits for it. */
  open(line: string): boolean {
    return this.queue.open(line);
  }

  /** Waits for the caller's turn on `line` (see `LocalQueue.enter`). */
  enter(
    line: string,
    lease: number,
    timeoutMs: number,
    signal?: AbortSignal,
    untilHeldMs?: number,
  ): Promise<TurnResult> {
    return this.queue.enter(line, lease, timeoutMs, signal, untilHeldMs);
  }

  /** A lease released a moment ago on `line`, for a caller that does not queue (see `LocalQueue.takeLingering`). */
  takeLingering(line: string, lease: number): Lock | undefined {
    return this.queue.takeLingering(line, lease);
  }

  /** The caller whose turn it is holds `lock` now. */
  hold(line: string, lock: Lock): void {
    this.queue.hold(line, lock);
  }

  /** The turn on `line` passes to the next caller (`lock`: only if it still holds it). */
  leave(line: string, lock?: Lock): void {
    this.queue.leave(line, lock);
  }

  /** The lock holding the turn on `line`, if any. */
  holderOf(line: string): Lock | undefined {
    return this.queue.holderOf(line);
  }

  // Waits on the nodes: a place in their wait queues, and the release
  // messages that wake the waiter or give it the key.

  /** True when waiters are woken by release messages (and so take places in the nodes' queues). */
  get listens(): boolean {
    return this.strategy.listensForReleases === true;
  }

  /** The place a release of this process reserved on `line` for an acquire of `lease` ms, if any. */
  takeReservation(line: string, lease: number): Reservation | undefined {
    return this.reservations.take(line, lease);
  }

  /** How `value`'s waiter is named in the nodes' wait queues (see `ReleaseListener.member`). */
  member(value: string, lease: number): string {
    return this.listener.member(value, lease);
  }

  /** Records release messages naming `value` between waits (see `ReleaseListener.expect`). */
  expect(
    keys: readonly string[],
    value: string,
    orAny = false,
  ): (() => void) | undefined {
    return this.listener.expect(keys, value, orAny);
  }

  /** The channel release messages reach this instance on (see `ReleaseListener.channel`). */
  get channel(): string {
    return this.listener.channel;
  }

  /**
   * Calls `wake` when a release of one of `keys` names `value`, or a value
   * nobody here listens for (see `ReleaseListener.listen`); returns the stop.
   */
  listen(keys: readonly string[], value: string, wake: () => void): () => void {
    return this.listener.listen(keys, value, wake, true);
  }

  /** Waits as the wait strategy says, until the next attempt should start. */
  wait(context: WaitContext): Promise<void> {
    return this.strategy.wait(context);
  }

  /** The nodes that gave `value`'s waiter the key since the last call; forgets them. */
  takeGiven(value: string): GivenNotes {
    return this.listener.takeGiven(value);
  }

  /** The lock a quorum of nodes gave `waiter` outright, if they did (see `transferred`). */
  transferred(waiter: Waiter, given: GivenNotes): Lock | undefined {
    return transferred(this.host, waiter, given);
  }

  // Releases.

  /** What the release of `lock` does: hand over, linger, renew, or release to the nodes. */
  release(lock: Lock): Promise<ReleaseResult> {
    return decideRelease(this, lock);
  }

  // Shutdown.

  /** Turns every local waiter away and wakes every waiter on the nodes (`quit()`, first step). */
  stop(): void {
    this.queue.closeAll();
    this.listener.wakeAll();
  }

  /** Abandons the open reservations and closes the subscriber connections (`quit()`, last step). */
  async close(): Promise<void> {
    await this.reservations.close();
    await this.listener.close();
  }
}
