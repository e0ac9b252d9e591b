/**
 * One reading of a node's clock: when the client asked and when the answer
 * came (the client's monotonic clock, ms), and the time the node gave (its
 * wall clock, `TIME`, in epoch ms).
 */
export interface ClockSample {
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly nodeTime: number;
}

/** A change of standing a reading caused: the node is now held out, or counts again. */
export type DriftVerdict = 'excluded' | 'restored' | undefined;

/**
 * Slack, in ms, on top of the readings' own uncertainty: the node's time is
 * rounded to the millisecond in places, and a timer may fire a little late.
 */
const SLACK_MS = 1;

/**
 * Judges one node's clock from successive readings: the node's offset from
 * the client's monotonic clock (its time less the middle of the round trip,
 * where the node read it give or take half the round trip) must not grow
 * faster than `maxRate` (the lock's `driftFactor`) times the time between
 * readings. Redis expires keys by its wall clock, so a node whose clock
 * runs fast, or jumps forward, drops our keys before the validity we
 * computed ends: the drift allowance only covers `maxRate`.
 *
 * The gain between two readings counts only beyond both readings'
 * uncertainty (half a round trip each) plus SLACK_MS: a slow answer makes
 * the detector less sensitive, never makes it hold out a healthy node.
 * A clock going back is no danger (keys then outlive the validity) and is
 * not held against the node. A node held out counts again at the first
 * reading within bounds once `exclusionMs` passed since the last reading
 * out of bounds.
 *
 * Pure: no timers, no Redis. `ClockMonitor` feeds it readings.
 */
export class DriftDetector {
  private last?: { mid: number; offset: number; halfRtt: number };
  private until = -Infinity;
  /** Whether the node's grants do not count now. */
  excluded = false;
  /** Readings observed. */
  samples = 0;
  /**
   * The node's clock gain over the last interval, as a fraction of the
   * interval (0.01: 1 % fast), counting only what exceeds the readings'
   * uncertainty; `undefined` before the second reading.
   */
  lastRate?: number;

  constructor(
    private readonly maxRate: number,
    private readonly exclusionMs: number,
  ) {}

  /** Takes one reading into account; returns the change of standing it caused, if any. */
  observe(sample: ClockSample): DriftVerdict {
    const halfRtt = Math.max(0, sample.answeredAt - sample.sentAt) / 2;
    const mid = sample.sentAt + halfRtt;
    const offset = sample.nodeTime - mid;
    const last = this.last;
    this.last = { mid, offset, halfRtt };
    this.samples++;
    if (!last || mid <= last.mid) return undefined;
    const elapsed = mid - last.mid;
    const gained = offset - last.offset - halfRtt - last.halfRtt - SLACK_MS;
    this.lastRate = Math.max(0, gained) / elapsed;
    if (gained > this.maxRate * elapsed) {
      this.until = sample.answeredAt + this.exclusionMs;
      if (this.excluded) return undefined;
      this.excluded = true;
      return 'excluded';
    }
    if (this.excluded && sample.answeredAt >= this.until) {
      this.excluded = false;
      return 'restored';
    }
    return undefined;
  }
}
