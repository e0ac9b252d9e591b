import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { channels, valueHash } from '../events/channels.js';
import { ClusterNode } from '../cluster/cluster-node.js';
import { ShardSubscriber } from '../cluster/shard-subscriber.js';
import { closeClient } from '../nodes/close-client.js';
import type { RedlockNode } from '../nodes/redlock-node.js';
import { parseReleaseMessage } from '../scripts/release-message.js';
import { bitCount, nodeBit } from '../util/node-mask.js';
import { NONE_GIVEN, type GivenNotes } from './queue-place.js';
import { QUORUM_GRACE_MS, type Listening } from './listening.js';
import { subscribeServer } from './server-subscriber.js';

/**
 * Hears release announcements (see the release script) and wakes the
 * waiters they name. One subscriber connection per server, created on the
 * first wait and shared by every waiter of the `Redlock` instance, on one
 * channel, `<metaPrefix>w:<id>` (a Redis Cluster node: per-key channels on
 * the key's shard, see `ShardSubscriber`), which carries the release
 * message (see `RELEASE_MESSAGE`) for the waiter of this instance that has
 * waited longest on that node: given the key outright (noted for
 * `takeGiven`), or told to ask.
 *
 * Only the named waiter wakes, in its process alone: the waiters of many
 * processes don't all rush the nodes at once, and the other processes are
 * not even woken up to read the message. Per-key state lives only while
 * someone waits.
 */
export class ReleaseListener {
  private readonly waiting = new Map<string, Set<Listening>>();
  /** Entries of acquires that expect announcements between their waits (see `expect`). */
  private readonly expected = new Map<string, Listening>();
  /** Keys given outright to a listening waiter, by its value (see `takeGiven`). */
  private readonly given = new Map<string, GivenNotes>();
  private subscribers?: Redis[];
  /** The Redis Cluster nodes' listeners, by node index (see `ShardSubscriber`). */
  private readonly sharded = new Map<number, ShardSubscriber>();
  private closed = false;
  /** Release messages that woke a waiter (tests and the bench read it). */
  wakeups = 0;

  /** This instance's name in the nodes' wait queues. */
  readonly id = randomBytes(9).toString('base64url');
  /** The channel the nodes announce releases to this instance on. */
  readonly channel: string;

  constructor(
    private readonly nodes: readonly RedlockNode[],
    metaPrefix: string,
    /** Announcements that make a waiter try at once: the nodes release one by one. */
    private readonly quorum: number,
  ) {
    this.channel = `${metaPrefix}w:${this.id}`;
  }

  /**
   * How `value`'s waiter is named in the nodes' wait queues; `lease` above
   * 0 lets a release give it the key outright (see WAIT_QUEUE_LUA).
   */
  member(value: string, lease: number): string {
    return `${this.id} ${value} ${lease}`;
  }

  /**
   * The nodes whose release gave `value`'s waiter the key while it
   * listened, since the last call, and when; forgets them.
   */
  takeGiven(value: string): GivenNotes {
    const given = this.given.get(value) ?? NONE_GIVEN;
    this.given.delete(value);
    return given;
  }

  /**
   * Calls `wake` when a release of any of `keys` names `value` (`orAny`:
   * or a value nobody here listens for). Returns the function that stops
   * listening; call it once woken too.
   * For a value under `expect`, announcements heard since the last wait
   * count: a quorum of them wakes at once.
   */
  listen(
    keys: readonly string[],
    value: string | undefined,
    wake: () => void,
    orAny = false,
  ): () => void {
    this.subscribe();
    const expected = value === undefined ? undefined : this.expected.get(value);
    if (expected) return this.attach(expected, wake);
    const entry: Listening = { keys, value, wake, heard: 0, orAny };
    this.add(keys, entry);
    return () => {
      clearTimeout(entry.timer);
      this.remove(keys, entry);
    };
  }

  /**
   * Records the announcements naming `value` from now on, also while no
   * wait listens: a refused attempt may still be out (its clean-up waits
   * for a slow node for up to the node timeout) when a release gives the
   * key to it, and the message would be lost before its wait starts
   * (the waiter would sleep until its fallback retry). The next `listen`
   * for `value` starts from what was heard. Only once this instance
   * listens at all (its first wait subscribes): before, nothing can be
   * heard: it returns `undefined`, and the caller asks again after its
   * first wait. Returns the function that stops, and forgets the value's
   * notes. `orAny`: as `listen`'s.
   */
  expect(
    keys: readonly string[],
    value: string,
    orAny = false,
  ): (() => void) | undefined {
    if (!this.subscribers) return undefined;
    if (this.expected.has(value)) return () => {};
    const entry: Listening = { keys, value, heard: 0, orAny };
    this.expected.set(value, entry);
    this.add(keys, entry);
    return () => {
      clearTimeout(entry.timer);
      this.remove(keys, entry);
      this.expected.delete(value);
      this.given.delete(value);
    };
  }

  /** A wait on an expected value: wakes at once if a quorum was heard already. */
  private attach(entry: Listening, wake: () => void): () => void {
    entry.wake = wake;
    const heard = bitCount(entry.heard);
    if (heard >= this.quorum) queueMicrotask(() => this.fire(entry));
    else if (heard > 0) this.startGrace(entry);
    return () => {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      entry.wake = undefined;
      // What woke this wait is spent; the next one starts afresh.
      entry.heard = 0;
    };
  }

  private add(keys: readonly string[], entry: Listening): void {
    for (const key of keys) {
      let set = this.waiting.get(key);
      if (!set) {
        this.waiting.set(key, (set = new Set()));
        for (const sub of this.sharded.values()) sub.add(this.keyChannel(key));
      }
      set.add(entry);
    }
  }

  private remove(keys: readonly string[], entry: Listening): void {
    for (const key of keys) {
      const set = this.waiting.get(key);
      if (!set) continue;
      set.delete(entry);
      if (set.size > 0) continue;
      this.waiting.delete(key);
      for (const sub of this.sharded.values()) sub.drop(this.keyChannel(key));
    }
  }

  /** A key's channel on a Redis Cluster node (see the release script). */
  private keyChannel(key: string): string {
    return `${this.channel}:${key}`;
  }

  /** A key's channel is heard from now on: its waiters try again (a release announced before was lost). */
  private heardFrom(channel: string): void {
    const set = this.waiting.get(channel.slice(this.channel.length + 1));
    for (const entry of [...(set ?? [])]) entry.wake?.();
  }

  /** @internal Keys with a waiter listening, unread notes of keys given, and acquires expecting announcements (0 when nobody waits). */
  get size(): number {
    return this.waiting.size + this.given.size + this.expected.size;
  }

  /** Closes the subscriber connections. */
  async close(): Promise<void> {
    this.closed = true;
    const subscribers = this.subscribers ?? [];
    this.subscribers = undefined;
    const sharded = [...this.sharded.values()];
    this.sharded.clear();
    await Promise.all([
      ...subscribers.map((s) => closeClient(s)),
      ...sharded.map((s) => s.close()),
    ]);
  }

  private subscribe(): void {
    if (this.subscribers || this.closed) return;
    let live = 0;
    this.subscribers = [];
    this.nodes.forEach((node, index) => {
      // A Cluster announces on per-key channels of the key's shard,
      // subscribed while their keys are waited for (see `add`).
      if (node instanceof ClusterNode) {
        live++;
        this.sharded.set(
          index,
          new ShardSubscriber(
            node,
            (message) => this.deliver(message, index),
            (channel) => this.heardFrom(channel),
          ),
        );
        return;
      }
      // Releases published before the subscription was live, or while it
      // was reconnecting, are lost: everyone waiting tries again, once a
      // quorum of nodes can be heard (one wake-up, not one per node).
      const sub = subscribeServer(
        node,
        this.channel,
        (message) => this.deliver(message, index),
        () => ++live === this.quorum && this.wakeAll(),
        () => this.wakeAll(),
      );
      this.subscribers?.push(sub);
    });
    if (live >= this.quorum) this.wakeAll();
  }

  /**
   * A release reaches the nodes one by one: a waiter woken by the first
   * announcement would find the others still held, fail, and clean up. So
   * it wakes once a quorum of nodes announced, or QUORUM_GRACE_MS after the
   * first.
   */
  private deliver(text: string, node: number): void {
    const message = parseReleaseMessage(text);
    if (!message) return;
    const set = this.waiting.get(message.key);
    if (!set) return;
    let anyone: Listening | undefined;
    for (const entry of set) {
      if (entry.value === message.value) {
        if (message.given) this.noteGiven(message.value, node, message.givenAt);
        this.heard(entry, node);
        return;
      }
      if (entry.orAny && entry.wake && !anyone) anyone = entry;
    }
    if (anyone && !message.given) this.heard(anyone, node);
  }

  /** Node `node` announced a release to `entry`'s waiter. */
  private heard(entry: Listening, node: number): void {
    entry.heard |= nodeBit(node);
    // Between the waits of an expected value: noted for the next one.
    if (!entry.wake) return;
    if (bitCount(entry.heard) >= this.quorum) this.fire(entry);
    else this.startGrace(entry);
  }

  /** Records that node `node` gave `value` the key at `time` (node clock; NaN when it did not say). */
  private noteGiven(value: string, node: number, time: number): void {
    const notes = this.given.get(value);
    const at = notes ? [...notes.at] : [];
    at[node] = Math.max(at[node] ?? -Infinity, time);
    this.given.set(value, { bits: (notes?.bits ?? 0) | nodeBit(node), at });
  }

  private fire(entry: Listening): void {
    if (!entry.wake) return;
    this.wakeups++;
    if (channels.woken.hasSubscribers && entry.value !== undefined)
      channels.woken.publish({
        keys: entry.keys,
        valueHash: valueHash(entry.value),
        nodes: bitCount(entry.heard),
        given: this.given.has(entry.value),
      });
    entry.wake();
  }

  private startGrace(entry: Listening): void {
    entry.timer ??= setTimeout(() => this.fire(entry), QUORUM_GRACE_MS);
  }

  /** @internal Wakes every listening waiter (reconnects, `quit()`). */
  wakeAll(): void {
    for (const set of [...this.waiting.values()])
      for (const entry of [...set]) entry.wake?.();
  }
}
