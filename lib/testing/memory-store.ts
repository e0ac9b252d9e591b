import type { ResolvedTiming } from '../core/config/timing.js';
import type { LockShape } from '../core/events/channels.js';
import { Lock, type LockOperations } from '../core/lock.js';
import type { NodeInspection } from '../core/operations/inspect.js';
import { randomValue } from '../core/util/lock-value.js';

/** What an acquire asks for, its options resolved. */
export interface MemoryCall {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly timing: ResolvedTiming;
  readonly fencing: boolean;
  /** A semaphore's permits or a read/write side, for the lock's events. */
  readonly shape?: LockShape;
  /** Whose fencing counter each key draws from (a permit slot: its resource's); default the keys. */
  readonly counters?: readonly string[];
}

/** A lock key as a Redis node would keep it: its holder and when it expires. */
interface Entry {
  readonly lock: Lock;
  /** When the key expires, on the lock's clock. */
  expiresAt: number;
}

/** Why a call was refused: the shortest lease it could wait for, if any. */
export interface Refusal {
  /** When the first holder in the way frees (ms); none when a writer's intent refused it. */
  readonly holderTtl?: number;
}

/**
 * The keys of the in-memory lock, as one Redis node would hold them: a key
 * per resource, holding one lock's value until it expires (a mutex, a
 * semaphore's permit slot, a writer); the readers of each key, each with
 * its own lease; the intent of a writer that readers refused (new readers
 * are refused while it stands); fencing counters per key; the callers
 * waiting for any release.
 */
export class MemoryStore {
  private readonly keys = new Map<string, Entry>();
  private readonly readers = new Map<string, Map<Lock, number>>();
  private readonly readLocks = new WeakSet<Lock>();
  private readonly intents = new Map<string, object>();
  private readonly tokens = new Map<string, bigint>();
  /** Woken by every release and loss, and when a writer drops its intent. */
  readonly waiters = new Set<() => void>();

  /** Whether none of `keys` is held at `now` (by a holder or a reader). */
  free(keys: readonly string[], now: number): boolean {
    return keys.every(
      (key) => this.live(key, now) === undefined && !this.lastReader(key, now),
    );
  }

  /**
   * Takes every key of `call` for a reader, or none: refused while a
   * writer (or a mutex) holds one, or a writer's intent stands on one.
   */
  takeRead(ops: LockOperations, call: MemoryCall, now: number): Lock | Refusal {
    for (const key of call.keys) {
      const entry = this.live(key, now);
      if (entry) return { holderTtl: entry.expiresAt - now };
      if (this.intents.has(key)) return {};
    }
    const lock = this.newLock(ops, call, now);
    this.readLocks.add(lock);
    for (const key of call.keys) {
      let readers = this.readers.get(key);
      if (!readers) this.readers.set(key, (readers = new Map()));
      readers.set(lock, now + call.timing.ttl);
    }
    return lock;
  }

  /**
   * Takes every key of `call` for the writer `owner`, or none: refused
   * while anyone holds one. A writer refused by readers leaves its intent
   * (unless another writer's stands), which keeps new readers out until
   * it holds or gives up ({@link dropIntent}).
   */
  takeWrite(
    ops: LockOperations,
    call: MemoryCall,
    owner: object,
    now: number,
  ): Lock | Refusal {
    for (const key of call.keys) {
      const entry = this.live(key, now);
      if (entry) return { holderTtl: entry.expiresAt - now };
      const intent = this.intents.get(key);
      const last = this.lastReader(key, now);
      if (last !== undefined) {
        if (intent === undefined) this.intents.set(key, owner);
        return { holderTtl: last - now };
      }
      if (intent !== undefined && intent !== owner) return {};
    }
    for (const key of call.keys)
      if (this.intents.get(key) === owner) this.intents.delete(key);
    return this.take(ops, call, now)!;
  }

  /** Drops the intent `owner` left on `keys` (it holds, or gave up), waking the waiters. */
  dropIntent(keys: readonly string[], owner: object): void {
    let dropped = false;
    for (const key of keys)
      if (this.intents.get(key) === owner) {
        this.intents.delete(key);
        dropped = true;
      }
    if (dropped) for (const wake of [...this.waiters]) wake();
  }

  /** The lease left of each reader holding `key` at `now` (ms), shortest first. */
  readerLeases(key: string, now: number): number[] {
    this.lastReader(key, now);
    return [...(this.readers.get(key)?.values() ?? [])]
      .map((expiresAt) => expiresAt - now)
      .sort((a, b) => a - b);
  }

  /** Whether a writer that readers refused waits on `key` (its intent stands). */
  hasIntent(key: string): boolean {
    return this.intents.has(key);
  }

  /** The readers holding `key` at `now`. */
  readersOf(key: string, now: number): Lock[] {
    this.lastReader(key, now);
    return [...(this.readers.get(key)?.keys() ?? [])];
  }

  /**
   * Takes every key of `call` at once for a new lock of `ops`, or none
   * (then `undefined`). With fencing, each resource gets its next token.
   */
  take(ops: LockOperations, call: MemoryCall, now: number): Lock | undefined {
    if (!this.free(call.keys, now)) return undefined;
    const lock = this.newLock(ops, call, now);
    for (const key of lock.keys)
      this.keys.set(key, { lock, expiresAt: now + call.timing.ttl });
    return lock;
  }

  private newLock(ops: LockOperations, call: MemoryCall, now: number): Lock {
    const { timing } = call;
    const lock = new Lock(
      ops,
      call.resources,
      call.keys,
      randomValue(),
      timing.ttl,
      now + timing.ttl - timing.drift,
    );
    if (call.shape) lock.shape = call.shape;
    if (call.fencing)
      (lock as { fencingTokens?: ReadonlyMap<string, string> }).fencingTokens =
        new Map(
          call.resources.map((r, i) => [
            r,
            this.nextToken((call.counters ?? call.keys)[i]),
          ]),
        );
    return lock;
  }

  /** The shortest time, in ms, until a held key of `keys` frees (its holder's lease, or its last reader's). */
  remaining(keys: readonly string[], now: number): number {
    let shortest = Infinity;
    for (const key of keys) {
      const entry = this.live(key, now);
      const until = entry?.expiresAt ?? this.lastReader(key, now);
      if (until !== undefined) shortest = Math.min(shortest, until - now);
    }
    return shortest === Infinity ? 0 : shortest;
  }

  /** The lock holding `key` at `now`. */
  holder(key: string, now: number): Lock | undefined {
    return this.live(key, now)?.lock;
  }

  /** Sets `lock`'s keys to expire at `expiresAt`, if it still holds all of them. */
  extend(lock: Lock, expiresAt: number, now: number): boolean {
    if (this.readLocks.has(lock)) {
      const held = lock.keys.every(
        (key) => (this.readers.get(key)?.get(lock) ?? -Infinity) > now,
      );
      if (held)
        for (const key of lock.keys)
          this.readers.get(key)!.set(lock, expiresAt);
      return held;
    }
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
    if (this.readLocks.has(lock)) {
      for (const key of lock.keys) {
        const readers = this.readers.get(key);
        const expiresAt = readers?.get(lock);
        if (expiresAt === undefined || expiresAt <= now) held = false;
        readers?.delete(lock);
        if (readers?.size === 0) this.readers.delete(key);
      }
      for (const wake of [...this.waiters]) wake();
      return held;
    }
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
    const until = this.live(key, now)?.expiresAt ?? this.lastReader(key, now);
    const token = this.tokens.get(key);
    const fencing = token === undefined ? {} : { fencingToken: String(token) };
    return until !== undefined
      ? {
          exists: true,
          ttlMs: until - now,
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

  /** The locks that hold a key at `now` (readers included). */
  held(now: number): Lock[] {
    const locks = new Set<Lock>();
    for (const key of this.keys.keys()) {
      const entry = this.live(key, now);
      if (entry) locks.add(entry.lock);
    }
    for (const key of this.readers.keys())
      for (const reader of this.readersOf(key, now)) locks.add(reader);
    return [...locks];
  }

  /** The locks holding a key whose lock is named by `match` (permit slots of a resource). */
  holdersWhere(match: (resource: string) => boolean, now: number): Lock[] {
    return this.held(now).filter((lock) => lock.resources.some(match));
  }

  /** When the last live reader of `key` expires, dropping expired readers. */
  private lastReader(key: string, now: number): number | undefined {
    const readers = this.readers.get(key);
    if (!readers) return undefined;
    let last: number | undefined;
    for (const [lock, expiresAt] of readers) {
      if (expiresAt <= now) readers.delete(lock);
      else if (last === undefined || expiresAt > last) last = expiresAt;
    }
    if (readers.size === 0) this.readers.delete(key);
    return last;
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
