import {
  channel,
  tracingChannel,
  type Channel,
  type TracingChannel,
} from 'node:diagnostics_channel';
import type { NodeVote } from '../../errors/node-vote.js';
import type { LockMode } from '../config/lock-options.js';
import type { ReleaseResult } from '../release-result.js';
import type { LockFailureReason } from '../../errors/lock-not-acquired.error.js';
import { createHash } from 'node:crypto';

/**
 * The `diagnostics_channel` names the library publishes on, by event. The
 * operations with a start and an end are `TracingChannel`s (subscribe with
 * `tracingChannel(name).subscribe({ start, asyncEnd, error })`); the others
 * are plain channels (`channel(name).subscribe(fn)`). Nothing is built or
 * published while nobody subscribes.
 *
 * @publicApi
 */
export const REDLOCK_CHANNELS = {
  /** TracingChannel: `acquire()` and `tryAcquire()`; {@link AcquireMessage}. */
  acquire: 'nestjs-redlock:acquire',
  /** TracingChannel: `lock.extend()`; {@link ExtendMessage}. */
  extend: 'nestjs-redlock:extend',
  /** TracingChannel: `lock.release()`; {@link ReleaseMessage}. */
  release: 'nestjs-redlock:release',
  /** TracingChannel: the fencing round of a fenced acquire; {@link FenceMessage}. */
  fence: 'nestjs-redlock:fence',
  /** Channel: one round of an acquire on every node; {@link AttemptMessage}. */
  attempt: 'nestjs-redlock:attempt',
  /** Channel: a held lock was found lost; {@link LostMessage}. */
  lost: 'nestjs-redlock:lost',
  /** Channel: a refused acquire starts waiting; {@link WaitMessage}. */
  wait: 'nestjs-redlock:wait',
  /** Channel: a release message woke a waiter; {@link WokenMessage}. */
  woken: 'nestjs-redlock:woken',
  /** Channel: a lease passed to another caller of the process; {@link HandoverMessage}. */
  handover: 'nestjs-redlock:handover',
  /** Channel: an acquire gave up; {@link NotAcquiredMessage}. */
  notAcquired: 'nestjs-redlock:not-acquired',
} as const;

/**
 * What a lock is besides a mutex: a permit of a semaphore of `permits`, or
 * one side (`mode`) of a read/write lock. A mutex has neither field.
 *
 * @publicApi
 */
export interface LockShape {
  /** The semaphore's permit count (`permits` of the acquire). */
  readonly permits?: number;
  /** The side of a read/write lock (`mode` of the acquire). */
  readonly mode?: LockMode;
}

/**
 * What every message names: the lock's resources and its value's hash,
 * and its shape when it is not a mutex (`permits`, `mode`: absent for a
 * mutex).
 */
interface LockMessage extends LockShape {
  readonly resources: readonly string[];
  /**
   * The first 16 characters (base64url) of the SHA-256 of the lock's
   * value: it tells locks apart without giving out the value, which is the
   * holder's secret (whoever knows it can release the lock).
   */
  valueHash?: string;
}

/**
 * `acquire` start, end and error. Set at the start: `resources`, `call`,
 * `fencing`, `ttl`, `waitTimeout`, and `permits` or `mode` when the call
 * asked for them (its `resources` are then those asked for, the lock's
 * name the permit slots it took); once it settled: `attempts`, `waitMs`,
 * the last attempt's `nodes`, and, when held, `valueHash`, `validityMs`
 * and `fencingTokens` (a `tryAcquire` that found the resources held has
 * no `valueHash`). `error` ends it otherwise. The lock itself is not on
 * the message: it carries its value, the holder's secret.
 *
 * @publicApi
 */
export interface AcquireMessage extends LockMessage {
  readonly call: 'acquire' | 'tryAcquire';
  readonly fencing: boolean;
  readonly ttl: number;
  readonly waitTimeout: number;
  attempts?: number;
  /** From the call to the grant (or to giving up), in ms. */
  waitMs?: number;
  validityMs?: number;
  fencingTokens?: Readonly<Record<string, string>>;
  nodes?: readonly NodeVote[];
  error?: unknown;
}

/** `extend`: `ttl` asked; `validityMs` once extended, or `error`. @publicApi */
export interface ExtendMessage extends LockMessage {
  readonly ttl: number | undefined;
  validityMs?: number;
  error?: unknown;
}

/** `release`: `holdMs` since the grant; `result`: the `ReleaseResult`. @publicApi */
export interface ReleaseMessage extends LockMessage {
  /** From the grant to the release, in ms (when it was known at the grant). */
  readonly holdMs: number | undefined;
  result?: ReleaseResult;
  error?: unknown;
}

/** `fence`: `fencingTokens` once issued, or `failure` (`expired`, `unreachable`). @publicApi */
export interface FenceMessage extends LockMessage {
  fencingTokens?: Readonly<Record<string, string>>;
  failure?: 'expired' | 'unreachable';
  error?: unknown;
}

/** `attempt`: each node's answer to one round, and how long it took. @publicApi */
export interface AttemptMessage extends LockMessage {
  readonly granted: boolean;
  readonly durationMs: number;
  /** Each node's outcome: granted, busy, timeout, error, quarantined. */
  readonly nodes: readonly NodeVote[];
  /** Each node's answer time in ms, `undefined` for a node that did not answer. */
  readonly latenciesMs: readonly (number | undefined)[];
}

/** `lost`: why, and how long it had been held. @publicApi */
export interface LostMessage extends LockMessage {
  readonly reason: string;
  readonly holdMs: number | undefined;
}

/** `wait`: a refused acquire waits; `holderTtlMs` is the holder's lease left, when known. @publicApi */
export interface WaitMessage extends LockMessage {
  readonly attempt: number;
  readonly remainingMs: number;
  readonly holderTtlMs: number | undefined;
}

/** `woken`: release messages woke the waiter for `keys`; `given`: the nodes gave it the key. @publicApi */
export interface WokenMessage {
  readonly keys: readonly string[];
  readonly valueHash: string;
  /** How many nodes announced the release. */
  readonly nodes: number;
  readonly given: boolean;
}

/**
 * `handover`: the lease passed to another caller of this process: straight
 * (`queue`), kept for a caller that asked right after the release
 * (`lingering`), or renewed on the nodes for it (`renewal`). @publicApi
 */
export interface HandoverMessage extends LockMessage {
  readonly via: 'queue' | 'lingering' | 'renewal';
}

/** `not-acquired`: an acquire gave up. @publicApi */
export interface NotAcquiredMessage extends LockMessage {
  readonly reason: LockFailureReason;
  readonly attempts: number;
  readonly nodes: readonly NodeVote[];
  readonly retryAfterMs: number;
}

/** The channels, created once (`diagnostics_channel` keeps them by name). */
export const channels = {
  acquire: tracingChannel<unknown, AcquireMessage>(REDLOCK_CHANNELS.acquire),
  extend: tracingChannel<unknown, ExtendMessage>(REDLOCK_CHANNELS.extend),
  release: tracingChannel<unknown, ReleaseMessage>(REDLOCK_CHANNELS.release),
  fence: tracingChannel<unknown, FenceMessage>(REDLOCK_CHANNELS.fence),
  attempt: channel(REDLOCK_CHANNELS.attempt) as Channel<
    unknown,
    AttemptMessage
  >,
  lost: channel(REDLOCK_CHANNELS.lost) as Channel<unknown, LostMessage>,
  wait: channel(REDLOCK_CHANNELS.wait) as Channel<unknown, WaitMessage>,
  woken: channel(REDLOCK_CHANNELS.woken) as Channel<unknown, WokenMessage>,
  handover: channel(REDLOCK_CHANNELS.handover) as Channel<
    unknown,
    HandoverMessage
  >,
  notAcquired: channel(REDLOCK_CHANNELS.notAcquired) as Channel<
    unknown,
    NotAcquiredMessage
  >,
};

/** Hashes of recent lock values: one lock's events (attempt, grant, release) hash it once. */
const recentHashes = new Map<string, string>();
const RECENT_HASHES = 1024;

/** The hash a message gives for a lock value (see `valueHash` in the messages). */
export function valueHash(value: string): string {
  let hash = recentHashes.get(value);
  if (hash === undefined) {
    hash = createHash('sha256').update(value).digest('base64url').slice(0, 16);
    if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
    recentHashes.set(value, hash);
  }
  return hash;
}

/**
 * The shape an acquire's options ask for (`permits`, `mode`), for its
 * messages and its lock; `undefined` for a mutex.
 */
export function shapeOf(options: LockShape | undefined): LockShape | undefined {
  const permits = options?.permits;
  const mode = options?.mode;
  if (permits === undefined && mode === undefined) return undefined;
  return mode === undefined
    ? { permits }
    : permits === undefined
      ? { mode }
      : { permits, mode };
}

/** A lock's fencing tokens as a plain object, for messages. */
export function tokensOf(
  tokens: ReadonlyMap<string, string> | undefined,
): Readonly<Record<string, string>> | undefined {
  return tokens && Object.fromEntries(tokens);
}

/**
 * Runs `run` as `TracingChannel.tracePromise` does (start, end, then
 * asyncStart and asyncEnd, or error with `message.error`, on the same
 * message), but leaves its outcome off the message: a `Lock` carries its
 * value, the holder's secret. `run` sets what the message says of it.
 */
export function traced<T, M extends { error?: unknown }>(
  trace: TracingChannel<unknown, M>,
  message: M,
  run: () => Promise<T>,
): Promise<T> {
  return trace.start.runStores(message, () => {
    let promise: Promise<T>;
    try {
      promise = run();
    } catch (error) {
      message.error = error;
      trace.error.publish(message);
      throw error;
    } finally {
      trace.end.publish(message);
    }
    return promise.then(
      (result) => {
        trace.asyncStart.publish(message);
        trace.asyncEnd.publish(message);
        return result;
      },
      (error: unknown) => {
        message.error = error;
        trace.error.publish(message);
        trace.asyncStart.publish(message);
        trace.asyncEnd.publish(message);
        throw error;
      },
    );
  });
}
