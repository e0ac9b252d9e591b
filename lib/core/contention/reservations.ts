import type { Ballot } from '../nodes/poll.js';
import { releaseReply } from '../scripts/release.script.js';
import type { ReleaseListener } from './release-listener.js';

/**
 * A place in the nodes' wait queues that a release took for its process's
 * next acquire of the same resource (see the release script).
 */
export interface Reservation {
  /** The local line (resources and fencing) it serves. */
  readonly line: string;
  readonly keys: readonly string[];
  /** The value the adopting acquire holds its lock with. */
  readonly value: string;
  /** Its name in the queues (`<listener id> <value> <lease>`). */
  readonly name: string;
  /** The lease a release gives it, in ms. */
  readonly lease: number;
  /** Its rank in the queues (client wall clock, ms). */
  readonly arrival: number;
  /**
   * When the release that queued it was sent (clock ms). A key given to
   * `value` was given after that: the value is new, and only that release
   * queued it.
   */
  readonly sentAt: number;
  /** Nodes (by index) that queued it, as far as their replies tell. */
  placed: number;
  /** Nodes that may have queued it: queued, or no answer. */
  maybe: boolean[];
  /** True once the nodes announced a release to it (a quorum, or the first plus a grace). */
  heard: boolean;
  /** Stops listening for its announcements. */
  stop?: () => void;
}

/**
 * Reservations of one `Redlock` instance, by local line. A reservation
 * waits for its adopter only until the next turn of the event loop: the
 * releasing caller asking again, or the next caller of the local queue,
 * comes in the microtasks that follow the release. Not adopted by then, it
 * is abandoned: it leaves the queues (a key already given to it is
 * released and goes on to the next waiter), so nobody waits for a caller
 * that never came.
 */
export class Reservations {
  private readonly open = new Map<string, Reservation>();

  constructor(
    private readonly listener: ReleaseListener,
    /** Takes a reservation back from the nodes that may hold it. */
    private readonly abandon: (r: Reservation) => Promise<unknown>,
  ) {}

  /** @internal Reservations waiting for an adopter (0 when none). */
  get size(): number {
    return this.open.size;
  }

  /** A new reservation's value, name and rank, before its release is sent. */
  draft(
    line: string,
    keys: readonly string[],
    value: string,
    lease: number,
    sentAt: number,
  ): Reservation {
    return {
      line,
      keys,
      value,
      name: this.listener.member(value, lease),
      lease,
      arrival: Date.now(),
      sentAt,
      placed: 0,
      maybe: [],
      heard: false,
    };
  }

  /**
   * Offers `r` to the next acquire of its line, given the replies of the
   * release that carried it.
   */
  offer(r: Reservation, ballots: readonly Ballot[]): void {
    r.maybe = ballots.map((b) => {
      if (b.outcome === 'granted' || b.outcome === 'busy') {
        const queued = releaseReply(b.reply).reserved;
        if (queued) r.placed++;
        return queued;
      }
      return true;
    });
    if (!r.maybe.some(Boolean)) return;
    // Listen at once: a short queue may give it the key before it is adopted.
    r.stop = this.listener.listen(r.keys, r.value, () => (r.heard = true));
    const previous = this.open.get(r.line);
    if (previous) void this.drop(previous);
    this.open.set(r.line, r);
    setImmediate(() => {
      if (this.open.get(r.line) === r) void this.drop(r);
    });
  }

  /** Takes the reservation of `line` for an acquire with lease `lease`, if any. */
  take(line: string, lease: number): Reservation | undefined {
    const r = this.open.get(line);
    if (!r || r.lease !== lease) return undefined;
    this.open.delete(line);
    r.stop?.();
    return r;
  }

  /** Abandons every open reservation (before the connections close). */
  async close(): Promise<void> {
    await Promise.all([...this.open.values()].map((r) => this.drop(r)));
  }

  private drop(r: Reservation): Promise<unknown> {
    this.open.delete(r.line);
    r.stop?.();
    this.listener.takeGiven(r.value);
    return this.abandon(r).catch(() => undefined);
  }
}
