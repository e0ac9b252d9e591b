import type { RedlockLogger } from '../config/options.js';
import type { RedlockNode } from './redlock-node.js';

/**
 * Two entries of `clients` that reached one Redis server (the same
 * `run_id`): under two names (`localhost` and `127.0.0.1`, a DNS alias), or
 * through a proxy. Indexes in the order of `clients`.
 */
export interface SameServer {
  readonly first: number;
  readonly second: number;
  readonly runId: string;
}

/**
 * Finds nodes that are one server reached twice, which names alone cannot
 * tell (the same host and port under two databases is refused at
 * construction). Redlock's safety needs N independent masters: such a
 * server's vote counts twice, so one server down or one holder there can
 * decide a quorum. On each connection a node's `run_id` (`INFO server`) is
 * read and compared with the others', and a repeat is logged once;
 * `RedlockModule` refuses to start with one (`find`). Off with one node.
 */
export class SameServerCheck {
  private readonly runIds: (string | undefined)[] = [];
  private readonly reported = new Set<string>();
  private readonly onReady: (() => void)[] = [];

  constructor(
    private readonly nodes: readonly RedlockNode[],
    private readonly logger: RedlockLogger,
    /** Check at each connection; false: only when `find` is called. */
    listen = true,
  ) {
    if (nodes.length < 2 || !listen) return;
    nodes.forEach((node, i) => {
      const onReady = () => void this.read(i);
      this.onReady.push(onReady);
      node.client.on('ready', onReady);
      if (node.client.status === 'ready') onReady();
    });
  }

  /**
   * Reads the run ids of the connected nodes, and of those still making
   * their first connection once they are connected (for `connectWithinMs`
   * at most); the first pair found to be one server.
   */
  async find(connectWithinMs = 0): Promise<SameServer | undefined> {
    if (this.nodes.length < 2) return undefined;
    await Promise.all(
      this.nodes.map((_, i) => this.readWhenReady(i, connectWithinMs)),
    );
    for (let i = 0; i < this.nodes.length; i++) {
      const pair = this.repeatOf(i);
      if (pair) return pair;
    }
    return undefined;
  }

  /** Stops listening to the clients. */
  close(): void {
    this.onReady.forEach((onReady, i) =>
      this.nodes[i].client.off('ready', onReady),
    );
  }

  private readWhenReady(i: number, withinMs: number): Promise<void> {
    const { client } = this.nodes[i];
    if (client.status === 'ready') return this.read(i);
    // A node that failed to connect already is down: nothing to wait for.
    if (withinMs <= 0 || !['connect', 'connecting'].includes(client.status))
      return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, withinMs);
      const onReady = () => void this.read(i).then(done);
      function done() {
        clearTimeout(timer);
        client.off('ready', onReady);
        resolve();
      }
      client.once('ready', onReady);
    });
  }

  private async read(i: number): Promise<void> {
    try {
      this.runIds[i] = await this.nodes[i].runId();
    } catch {
      // Read again at the next connection: nothing to compare meanwhile.
      return;
    }
    const pair = this.repeatOf(i);
    if (!pair) return;
    const key = `${pair.first}/${pair.second}/${pair.runId}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.logger.warn(
      `clients[${pair.second}] ${describeSameServer(this.nodes, pair)}`,
    );
  }

  /** The pair node `i` makes with an earlier or later node of the same run id. */
  private repeatOf(i: number): SameServer | undefined {
    const runId = this.runIds[i];
    if (runId === undefined) return undefined;
    const j = this.runIds.findIndex((id, k) => k !== i && id === runId);
    if (j < 0) return undefined;
    return { first: Math.min(i, j), second: Math.max(i, j), runId };
  }
}

/** What is wrong with the second of a pair (the warning, and the module's refusal). */
export function describeSameServer(
  nodes: readonly RedlockNode[],
  { first, second, runId }: SameServer,
): string {
  return `(${nodes[second].name}) is the same Redis server as clients[${first}] (${nodes[first].name}), run_id ${runId}: Redlock needs N independent masters, and this one's vote counts twice; list each server once`;
}
