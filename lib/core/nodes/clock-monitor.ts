import type { RedlockLogger } from '../config/options.js';
import type { ClockMonitorSettings } from '../config/resolve.js';
import type { Clock } from '../util/clock.js';
import { withTimeout } from '../util/timeout.js';
import {
  DriftDetector,
  type ClockSample,
  type DriftVerdict,
} from './drift-detector.js';
import type { RedlockNode } from './redlock-node.js';

/**
 * The node-clock monitor (`clockMonitor`): every `interval` it reads each
 * connected node's `TIME` and hands the reading to that node's
 * `DriftDetector`. A node whose clock gains on the client's monotonic clock
 * faster than `driftFactor` (a forward jump, or a clock running fast) stops
 * counting toward a quorum, as a quarantined node does (see `NodeStanding`),
 * until it has kept within bounds for `exclusion` ms. One warning when a
 * node is held out and one when it counts again.
 *
 * It narrows the hazard, it does not close it: a jump is seen at the next
 * reading, up to `interval` later, and keys that expired early before that
 * are gone. With the monitor off it does nothing and costs nothing.
 */
export class ClockMonitor {
  private readonly detectors: DriftDetector[] = [];
  private readonly reading = new Set<number>();
  private timer?: NodeJS.Timeout;
  /** A reading not answered within an interval is dropped. */
  private readonly readTimeout: number;

  constructor(
    private readonly nodes: readonly RedlockNode[],
    settings: ClockMonitorSettings | undefined,
    maxRate: number,
    private readonly clock: Clock,
    private readonly logger: RedlockLogger,
  ) {
    this.readTimeout = settings?.interval ?? 0;
    if (!settings) return;
    for (let i = 0; i < nodes.length; i++)
      this.detectors.push(new DriftDetector(maxRate, settings.exclusion));
    this.timer = setInterval(() => this.readAll(), settings.interval);
    // A monitor never keeps a process alive on its own.
    this.timer.unref();
  }

  /** Whether the monitor runs (the option is on and `close()` was not called). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Whether node `i`'s grants count as far as its clock goes (always, with the monitor off). */
  counts(i: number): boolean {
    return !this.detectors[i]?.excluded;
  }

  /** Whether node `i` is held out for its clock. */
  suspect(i: number): boolean {
    return this.detectors[i]?.excluded ?? false;
  }

  /** @internal Node `i`'s detector (readings taken, last rate), for tests and reports. */
  detector(i: number): DriftDetector | undefined {
    return this.detectors[i];
  }

  /**
   * @internal Hands node `i`'s detector one reading and logs a change of
   * standing. The monitor's own readings come through here; tests may pass
   * made-up ones to drive the detector (Redis cannot move its `TIME`).
   */
  record(i: number, sample: ClockSample): DriftVerdict {
    const detector = this.detectors[i];
    if (!detector) return undefined;
    const verdict = detector.observe(sample);
    const name = this.nodes[i].name;
    if (verdict === 'excluded')
      this.logger.warn(
        `Redis node ${name}'s clock gained on this client's faster than driftFactor allows (${percent(detector.lastRate)} over the last interval): its grants do not count until it keeps time again (clockMonitor)`,
      );
    else if (verdict === 'restored')
      this.logger.warn(
        `Redis node ${name}'s clock kept time again: its grants count again (clockMonitor)`,
      );
    return verdict;
  }

  /** Stops reading the clocks. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private readAll(): void {
    this.nodes.forEach((node, i) => {
      // One reading out per node; a node not connected is not asked (its
      // client would queue the request or fail it).
      if (this.reading.has(i) || node.client.status !== 'ready') return;
      this.reading.add(i);
      void this.read(node, i).finally(() => this.reading.delete(i));
    });
  }

  private async read(node: RedlockNode, i: number): Promise<void> {
    const sentAt = this.clock.now();
    // ioredis types the reply as numbers; it gives the strings Redis sends.
    let reply: (number | string)[];
    try {
      reply = await withTimeout(node.client.time(), this.readTimeout);
    } catch {
      // No reading this time: a node down is the quorum's concern, not the clock's.
      return;
    }
    const answeredAt = this.clock.now();
    if (!this.running) return;
    const nodeTime = Number(reply[0]) * 1000 + Number(reply[1]) / 1000;
    if (Number.isFinite(nodeTime))
      this.record(i, { sentAt, answeredAt, nodeTime });
  }
}

function percent(rate: number | undefined): string {
  return `${((rate ?? 0) * 100).toFixed(1)} % fast`;
}
