import { Redis } from 'ioredis';
import { closeClient, DROP_AT_ONCE } from '../nodes/close-client.js';
import type { ClusterNode } from './cluster-node.js';
import { slotOf } from './key-slot.js';

/**
 * How long a channel stays subscribed after its last waiter left, in ms: a
 * key waited for again soon (a hot lock) keeps its subscription, and its
 * waiters need no new one (see `onListening`).
 */
const LINGER_MS = 5000;

interface Subscription {
  /** Waited keys using the channel. */
  refs: number;
  /** The master (`host:port`) it is subscribed on, once asked. */
  shard?: string;
  linger?: NodeJS.Timeout;
}

/**
 * The release announcements of a Redis Cluster node, heard through sharded
 * pub/sub: one channel per waited key (it carries the key's hash tag, so it
 * lives on the key's shard), subscribed (`SSUBSCRIBE`) on the master that
 * owns the key, over one connection per shard shared by every waiter of
 * the process. When the cluster's slots move (a migration, a failover), the
 * channels follow their slots to the new owners. A message lost meanwhile
 * is covered by the waiters' fallback retries.
 */
export class ShardSubscriber {
  private readonly connections = new Map<string, Redis>();
  private readonly subscriptions = new Map<string, Subscription>();
  private closed = false;

  constructor(
    private readonly node: ClusterNode,
    /** Called with each message. */
    private readonly onMessage: (message: string) => void,
    /**
     * Called when a channel starts being heard (subscribed anew, or again
     * after a reconnection or a move): a release announced before was lost.
     */
    private readonly onListening: (channel: string) => void,
  ) {
    node.cluster.on('refresh', this.follow);
  }

  /** Listens on `channel` (counted: one `drop` per `add`). */
  add(channel: string): void {
    const subscription = this.subscriptions.get(channel);
    if (subscription) {
      subscription.refs++;
      clearTimeout(subscription.linger);
      subscription.linger = undefined;
      return;
    }
    this.subscriptions.set(channel, { refs: 1 });
    void this.place(channel);
  }

  /** Stops listening on `channel` once nobody has used it for LINGER_MS. */
  drop(channel: string): void {
    const subscription = this.subscriptions.get(channel);
    if (!subscription || --subscription.refs > 0) return;
    subscription.linger = setTimeout(() => {
      if (subscription.refs > 0) return;
      this.subscriptions.delete(channel);
      const on = subscription.shard && this.connections.get(subscription.shard);
      if (on) on.sunsubscribe(channel).catch(() => undefined);
    }, LINGER_MS);
    subscription.linger.unref();
  }

  /** @internal Channels subscribed or lingering (tests read it). */
  get size(): number {
    return this.subscriptions.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.node.cluster.off('refresh', this.follow);
    for (const s of this.subscriptions.values()) clearTimeout(s.linger);
    this.subscriptions.clear();
    const connections = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(connections.map((c) => closeClient(c)));
  }

  /** The slots were read again: channels whose owner changed move. */
  private readonly follow = (): void => {
    for (const channel of this.subscriptions.keys()) void this.place(channel);
  };

  /** Subscribes `channel` on the master that owns its slot, if not there yet. */
  private async place(channel: string): Promise<void> {
    const subscription = this.subscriptions.get(channel);
    const owner = this.node.cluster.slots[slotOf(channel)]?.[0];
    if (!subscription || !owner || this.closed) return;
    if (subscription.shard === owner) return;
    const previous = subscription.shard;
    subscription.shard = owner;
    if (previous)
      this.connections
        .get(previous)
        ?.sunsubscribe(channel)
        .catch(() => undefined);
    try {
      await this.connectionTo(owner).ssubscribe(channel);
      this.onListening(channel);
    } catch (error) {
      // MOVED: the slot has another owner than the cluster thought; the
      // refresh asked for here places it again (see `follow`).
      if (subscription.shard === owner) subscription.shard = undefined;
      if (/^(MOVED|ASK)/.test((error as Error).message))
        this.node.cluster.refreshSlotsCache();
    }
  }

  private connectionTo(owner: string): Redis {
    const existing = this.connections.get(owner);
    if (existing) return existing;
    const cut = owner.lastIndexOf(':');
    const connection = new Redis({
      ...this.node.cluster.options.redisOptions,
      host: owner.slice(0, cut),
      port: Number(owner.slice(cut + 1)),
      lazyConnect: false,
      maxRetriesPerRequest: null,
      // SSUBSCRIBE may leave before the connection is made.
      enableOfflineQueue: true,
      // Re-subscribed below, where a failure is handled (see
      // ReleaseListener.subscribe).
      autoResubscribe: false,
      ...DROP_AT_ONCE,
    });
    connection.on('error', () => undefined);
    connection.on('smessage', (_channel: string, message: string) =>
      this.onMessage(message),
    );
    // The server dropped a subscription (its slot moved away).
    connection.on('moved', () => this.node.cluster.refreshSlotsCache());
    let connected = false;
    connection.on('ready', () => {
      if (connected) this.resubscribe(owner);
      connected = true;
    });
    this.connections.set(owner, connection);
    return connection;
  }

  /** Reconnected to `owner`: its channels are placed again. */
  private resubscribe(owner: string): void {
    for (const [channel, subscription] of this.subscriptions)
      if (subscription.shard === owner) {
        subscription.shard = undefined;
        void this.place(channel);
      }
  }
}
