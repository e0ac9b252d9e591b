import type { Clock } from '../util/clock.js';
import type { RedlockLogger } from '../config/options.js';
import type { RedlockNode } from './redlock-node.js';

/** What the quarantine knows of one node. */
interface NodeState {
  /** Its uptime was read since it last connected. */
  checked: boolean;
  /**
   * Until when (clock ms) its grants do not count, by shard (`shardOf`):
   * one entry for a server, one per master for a Redis Cluster, whose
   * grants count on the slots of masters old enough.
   */
  until: Map<string, number>;
  stop?: () => void;
  /** A read is under way; `again`: another was asked for meanwhile. */
  reading?: boolean;
  again?: boolean;
}

/**
 * "Delayed restart", kept by the client: a node that restarted
 * without persistence has lost the keys it held, and could grant a lock that
 * another client still holds through it. So a node's grants count toward a
 * quorum only once it has been up for `quarantineMs` (set it to the longest
 * lease any client uses): on every connection (first contact, reconnect
 * after a restart) the node's uptime is read (`INFO server`), and a node
 * younger than that is quarantined for the rest. Until its uptime is read,
 * a node's grants do not count either. Its requests still run (so its keys
 * are in place when it counts again) and failed attempts take back what it
 * granted. Extensions still count it: a node that restarted empty has lost
 * the key and refuses them, and one that kept it (persistence) extends a
 * lock it really holds.
 *
 * It sees restarts, not a failover to a replica that missed the latest
 * writes, nor data flushed by hand: Redlock's nodes are independent masters.
 * With `quarantineMs` 0 it does nothing and costs nothing.
 */
export class RestartQuarantine {
  private readonly states: NodeState[] = [];
  /** Called after each uptime check (`Redlock.ready()` waits on them). */
  readonly checkedListeners = new Set<() => void>();

  constructor(
    private readonly nodes: readonly RedlockNode[],
    private readonly quarantineMs: number,
    private readonly clock: Clock,
    private readonly logger: RedlockLogger,
  ) {
    if (quarantineMs <= 0) return;
    nodes.forEach((node, i) => {
      const state: NodeState = { checked: false, until: new Map() };
      this.states.push(state);
      state.stop = node.watchConnection(
        () => void this.check(i),
        () => {
          state.checked = false;
          // A Cluster stays ready when one of its connections closes, and
          // the connection that replaces it may have been ready already.
          if (node.client.status === 'ready')
            setTimeout(() => void this.check(i), 100).unref();
        },
      );
      // A borrowed client connected already says 'ready' no more.
      if (node.client.status === 'ready') void this.check(i);
    });
  }

  /**
   * Whether node `i`'s grants of `keys` count toward a quorum now; without
   * keys, whether all of its grants do (every shard old enough).
   */
  counts(i: number, keys?: readonly string[]): boolean {
    const state = this.states[i];
    if (!state) return true;
    if (!state.checked) return false;
    const now = this.clock.now();
    if (!keys) {
      for (const until of state.until.values()) if (now < until) return false;
      return true;
    }
    const node = this.nodes[i];
    for (const key of keys) {
      const until = state.until.get(node.shardOf(key));
      // A shard not read yet (a master promoted since) does not count.
      if (until === undefined || now < until) return false;
    }
    return true;
  }

  /** How a grant of `keys` by node `i` votes: `granted`, or `quarantined` when it does not count. */
  grant(i: number, keys?: readonly string[]): 'granted' | 'quarantined' {
    return this.counts(i, keys) ? 'granted' : 'quarantined';
  }

  /** Whether node `i`'s uptime was read since it last connected (always true when off). */
  checked(i: number): boolean {
    return this.states[i]?.checked ?? true;
  }

  /** Stops listening to the clients. */
  close(): void {
    for (const state of this.states) state.stop?.();
    this.checkedListeners.clear();
  }

  private async check(i: number): Promise<void> {
    const state = this.states[i];
    if (state.reading) {
      state.again = true;
      return;
    }
    state.reading = true;
    try {
      await this.read(i);
    } finally {
      state.reading = false;
    }
    if (state.again) {
      state.again = false;
      await this.check(i);
    }
  }

  private async read(i: number): Promise<void> {
    const node = this.nodes[i];
    let reported: Map<string, number>;
    try {
      reported = await node.uptimes();
    } catch (error) {
      // Checked again at the next connection; until then it does not count.
      this.logger.warn(
        `Could not read the uptime of Redis node ${node.name} (${(error as Error).message}): its grants do not count until it can be read`,
      );
      return;
    }
    const state = this.states[i];
    const until = new Map<string, number>();
    for (const [shard, seconds] of reported) {
      // Redis gives the difference of two epoch times truncated to whole
      // seconds (now and start), so a node started at x.9 s says 1 s at
      // x+1.0 s: up to 1 s more than it has been up (a test read 1 s 31 ms
      // after a restart). Taking 1 s off never underestimates the rest of
      // the quarantine; it may overestimate it by up to 2 s.
      const uptimeMs = 1000 * Math.max(0, seconds - 1);
      const where = shard ? `${node.name} (shard ${shard})` : node.name;
      if (!Number.isFinite(uptimeMs)) {
        this.logger.warn(
          `Redis node ${where} reports no uptime_in_seconds: its grants do not count`,
        );
        return;
      }
      const rest = this.quarantineMs - uptimeMs;
      until.set(shard, this.clock.now() + Math.max(0, rest));
      if (rest > 0)
        this.logger.warn(
          `Redis node ${where} started at least ${uptimeMs / 1000} s ago: its grants do not count for another ${Math.ceil(rest)} ms (restartQuarantine)`,
        );
    }
    state.until = until;
    state.checked = true;
    for (const listener of this.checkedListeners) listener();
  }
}
