import type { ResolvedTiming } from '../core/config/timing.js';
import { Lock, type LockOperations } from '../core/lock.js';
import type { NodeInspection } from '../core/operations/inspect.js';
import { randomValue } from '../core/util/lock-value.js';

/** What an acquire asks for, its options resolved. */
export interface MemoryCall {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly timing: ResolvedTiming;
  readonly fencing: boolean;
}

/** A lock key as a Redis node would keep it: its holder and when it expires. */
interface Entry {
  readonly lock: Lock;
  /** When the key expires, on the lock's clock. */
  expiresAt: number;
}

/**
 * The keys of the in-memory lock, as one Redis node would hold them: a key
 * per resource, holding one lock's value until it expires; fencing
 * counters per key; the callers waiting for any release.
 */
export class MemoryStore {
  private readonly keys = new Map<string, Entry>();
  private readonly tokens = new Map<string, bigint>();
  /** Woken by every release and loss. */
  readonly waiters = new Set<() => void>();

  /** Whether none of `keys` is held at `now`. */
  free(keys: readonly string[], now: number): boolean {
    return keys.every((key) => this.live(key, now) === undefined);
  }

  /**
   * Takes every key of `call` at once for a new lock of `ops`, or none
   * (then `undefined`). With fencing, each resource gets its next token.
   */
  take(ops: LockOperations, call: MemoryCall, now: number): Lock | undefined {
    if (!this.free(call.keys, now)) return undefined;
    const { timing } = call;
    const lock = new Lock(
      ops,
      call.resources,
      call.keys,
      randomValue(),
      timing.ttl,
      now + timing.ttl - timing.drift,
    );
    for (const key of lock.keys)
      this.keys.set(key, { lock, expiresAt: now + timing.ttl });
    if (call.fencing)
      (lock as { fencingTokens?: ReadonlyMap<string, string> }).fencingTokens =
        new Map(
          call.resources.map((r, i) => [r, this.nextToken(call.keys[i])]),
        );
    return lock;
  }

  /** The shortest time, in ms, until a held key of `keys` expires. */
  remaining(keys: readonly string[], now: number): number {
    let shortest = Infinity;
    for (const key of keys) {
      const entry = this.live(key, now);
      if (entry) shortest = Math.min(shortest, entry.expiresAt - now);
    }
    return shortest === Infinity ? 0 : shortest;
  }

  /** The lock holding `key` at `now`. */
  holder(key: string, now: number): Lock | undefined {
    return this.live(key, now)?.lock;
  }

  /** Sets `lock`'s keys to expire at `expiresAt`, if it still holds all of them. */
  extend(lock: Lock, expiresAt: number, now: number): boolean {
    const entries = lock.keys.map((key) => this.live(key, now));
    if (!entries.every((e) => e?.lock === lock)) return false;
    for (const entry of entries) entry!.expiresAt = expiresAt;
    return true;
  }

  /**
   * Deletes the keys `lock` still holds at `now` (never another lock's) and
   * wakes the waiters. Returns whether it held all of them (an expired key
   * reads as gone, as on a node).
   */
  delete(lock: Lock, now: number): boolean {
    let held = true;
    for (const key of lock.keys) {
      const entry = this.keys.get(key);
      if (entry?.lock !== lock) {
        held = false;
        continue;
      }
      if (entry.expiresAt <= now) held = false;
      this.keys.delete(key);
    }
    for (const wake of [...this.waiters]) wake();
    return held;
  }

  /** What `inspect` reports of `key` at `now` (every lock here is this instance's). */
  view(key: string, now: number): Omit<NodeInspection, 'node' | 'up'> {
    const entry = this.live(key, now);
    const token = this.tokens.get(key);
    const fencing = token === undefined ? {} : { fencingToken: String(token) };
    return entry
      ? {
          exists: true,
          ttlMs: entry.expiresAt - now,
          holder: 'this-instance',
          queued: this.waiters.size,
          ...fencing,
        }
      : { exists: false, queued: this.waiters.size, ...fencing };
  }

  /** The next fencing token of `key`: above every earlier one. */
  nextToken(key: string): string {
    const token = (this.tokens.get(key) ?? 0n) + 1n;
    this.tokens.set(key, token);
    return String(token);
  }

  /** The locks that hold a key at `now`. */
  held(now: number): Lock[] {
    const locks = new Set<Lock>();
    for (const key of this.keys.keys()) {
      const entry = this.live(key, now);
      if (entry) locks.add(entry.lock);
    }
    return [...locks];
  }

  /** The entry of `key` if it has not expired at `now` (an expired one is dropped). */
  private live(key: string, now: number): Entry | undefined {
    const entry = this.keys.get(key);
    if (entry && entry.expiresAt <= now) {
      this.keys.delete(key);
      return undefined;
    }
    return entry;
  }
}
