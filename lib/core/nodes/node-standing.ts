import type { RedlockLogger } from '../config/options.js';
import type { Clock } from '../util/clock.js';
import type { ClockMonitor } from './clock-monitor.js';
import type { RedlockNode } from './redlock-node.js';
import { RestartQuarantine } from './restart-quarantine.js';

/**
 * Whether each node's grants count toward a quorum: the restart
 * quarantine's rule, and the clock monitor's besides. A node held out by
 * either is `quarantined` in the votes: its grants do not count, and a
 * failed attempt takes them back (acquires, keys given on release and
 * fencing rounds all ask `grant` / `counts`). A subclass rather than a
 * second check at every caller, so each place that asks keeps asking one
 * object.
 */
export class NodeStanding extends RestartQuarantine {
  constructor(
    nodes: readonly RedlockNode[],
    quarantineMs: number,
    clock: Clock,
    logger: RedlockLogger,
    /** The node-clock monitor (a no-op when `clockMonitor` is off). */
    readonly clockMonitor: ClockMonitor,
  ) {
    super(nodes, quarantineMs, clock, logger);
  }

  /** Whether node `i`'s grants (of `keys`) count now: neither restarted too recently nor clock-suspect. */
  override counts(i: number, keys?: readonly string[]): boolean {
    return super.counts(i, keys) && this.clockMonitor.counts(i);
  }

  /** Whether node `i` is held out by the restart quarantine (its clock aside). */
  restarted(i: number): boolean {
    return !super.counts(i);
  }

  /** Stops listening to the clients and reading their clocks. */
  override close(): void {
    super.close();
    this.clockMonitor.close();
  }
}
