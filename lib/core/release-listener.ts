import type { Redis } from 'ioredis';
import type { RedlockNode } from './redlock-node.js';

/** One waiting acquire, as the listener sees it. */
interface Listening {
  /** The waiter's lock value (the release message may name it). */
  readonly value: string | undefined;
  readonly wake: () => void;
}

/**
 * Hears release announcements (see the release script) and wakes the
 * waiters they concern. One subscriber connection per node, created on the
 * first wait (a `duplicate()` of the node's client, owned and closed here)
 * and shared by every waiter of the process; no per-resource subscription:
 * one channel per node, `<metaPrefix>released`, carries `<key>\n<head>`.
 *
 * A message naming a waiter of this process wakes that one only, so the
 * waiters of many processes don't all rush the nodes at once; a message
 * naming someone elsewhere wakes nobody here (that waiter goes first; ours
 * keep their fallback timer). Per-key state lives only while someone waits.
 */
export class ReleaseListener {
  private readonly waiting = new Map<string, Set<Listening>>();
  private subscribers?: Redis[];
  private closed = false;
  /** Release messages that woke a waiter (tests and the bench read it). */
  wakeups = 0;

  constructor(
    private readonly nodes: readonly RedlockNode[],
    readonly channel: string,
  ) {}

  /**
   * Calls `wake` when a release of any of `keys` names `value` (or names no
   * one). Returns the function that stops listening; call it once woken too.
   */
  listen(
    keys: readonly string[],
    value: string | undefined,
    wake: () => void,
  ): () => void {
    this.subscribe();
    const entry: Listening = { value, wake };
    for (const key of keys) {
      let set = this.waiting.get(key);
      if (!set) this.waiting.set(key, (set = new Set()));
      set.add(entry);
    }
    return () => {
      for (const key of keys) {
        const set = this.waiting.get(key);
        if (!set) continue;
        set.delete(entry);
        if (set.size === 0) this.waiting.delete(key);
      }
    };
  }

  /** @internal Keys with a waiter listening (0 when nobody waits). */
  get size(): number {
    return this.waiting.size;
  }

  /** Closes the subscriber connections. */
  async close(): Promise<void> {
    this.closed = true;
    const subscribers = this.subscribers ?? [];
    this.subscribers = undefined;
    await Promise.all(
      subscribers.map((s) => s.quit().catch(() => s.disconnect())),
    );
  }

  private subscribe(): void {
    if (this.subscribers || this.closed) return;
    this.subscribers = this.nodes.map((node) => {
      // A subscriber must never give up: ioredis reconnects and
      // re-subscribes by itself, and a waiter's fallback timer covers the
      // messages missed meanwhile.
      const sub = node.client.duplicate({
        lazyConnect: false,
        maxRetriesPerRequest: null,
        enableAutoPipelining: false,
      });
      sub.on('error', () => undefined);
      sub.on('message', (_channel: string, message: string) =>
        this.deliver(message),
      );
      // Releases published before the subscription was live, or while it
      // was reconnecting, are lost: let everyone waiting try again.
      sub.subscribe(this.channel).then(
        () => this.wakeAll(),
        () => undefined,
      );
      let connected = false;
      sub.on('ready', () => {
        if (connected) setTimeout(() => this.wakeAll(), 20).unref();
        connected = true;
      });
      return sub;
    });
  }

  private deliver(message: string): void {
    const cut = message.lastIndexOf('\n');
    const key = cut < 0 ? message : message.slice(0, cut);
    const head = cut < 0 ? '' : message.slice(cut + 1);
    const set = this.waiting.get(key);
    if (!set) return;
    for (const entry of set) {
      if (head === '' || entry.value === head) {
        this.wakeups++;
        entry.wake();
        if (head !== '') return;
      }
    }
  }

  private wakeAll(): void {
    for (const set of [...this.waiting.values()])
      for (const entry of [...set]) entry.wake();
  }
}
