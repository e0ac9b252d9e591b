import { LockNotAcquiredError } from '../errors/lock-not-acquired.error.js';
import type { LockFailureReason } from '../errors/lock-not-acquired.error.js';
import { LockServiceUnavailableError } from '../errors/lock-service-unavailable.error.js';
import { isRedlockError } from '../errors/redlock.error.js';
import { retryAfterOf } from '../utils/retry-after.js';

/**
 * What a client is told when a call could not get its lock, in every
 * context (the HTTP body, a GraphQL error's `extensions`, the RPC error, the
 * WebSocket `exception` payload): the same fields and the same words. It
 * names the resources, never the Redis nodes (their addresses stay in the
 * server's logs).
 *
 * @publicApi
 */
export interface LockConflict {
  /** The error class on the server. */
  readonly name: 'LockNotAcquiredError' | 'LockServiceUnavailableError';
  /** `CONFLICT`: held by someone else; `SERVICE_UNAVAILABLE`: the lock service failed or is shutting down. */
  readonly code: 'CONFLICT' | 'SERVICE_UNAVAILABLE';
  /** The HTTP status that goes with `code`. */
  readonly statusCode: 409 | 503;
  /** For people: `The resource is locked: sku:1. Retry after 10 s.` */
  readonly message: string;
  /** Why, as {@link LockFailureReason}, or `shutdown`. */
  readonly reason: LockFailureReason | 'shutdown';
  /** The resources asked for (not prefixed); empty at shutdown. */
  readonly resources: readonly string[];
  /** When trying again may succeed, in whole ms (see `RetryAfter`). */
  readonly retryAfterMs: number;
}

/** The conflict a client is told of for `error`, or `undefined` when it is not one. */
export function conflictOf(error: unknown): LockConflict | undefined {
  if (error instanceof LockNotAcquiredError) {
    const retryAfterMs = Math.ceil(retryAfterOf(error));
    const busy = error.statusCode === 409;
    return {
      name: 'LockNotAcquiredError',
      code: busy ? 'CONFLICT' : 'SERVICE_UNAVAILABLE',
      statusCode: error.statusCode,
      message:
        (busy
          ? 'The resource is locked: '
          : 'The lock service is unavailable for: ') +
        `${error.resources.join(', ')}. Retry after ${inSeconds(retryAfterMs)} s.`,
      reason: error.reason,
      resources: [...error.resources],
      retryAfterMs,
    };
  }
  // The other reasons are programming errors: the app's own answer (500).
  if (
    error instanceof LockServiceUnavailableError &&
    error.reason === 'shutdown'
  )
    return {
      name: 'LockServiceUnavailableError',
      code: 'SERVICE_UNAVAILABLE',
      statusCode: 503,
      message:
        'The server is shutting down and takes no new locks. Retry after 1 s.',
      reason: 'shutdown',
      resources: [],
      retryAfterMs: 1000,
    };
  return undefined;
}

/** `Retry-After` in whole seconds, at least 1 (HTTP has no finer unit). */
export function inSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The lock conflict in what a client received, or `undefined`: an RPC
 * error, a WebSocket `exception` payload, an HTTP body, a GraphQL error
 * (its `extensions`), or the server's error itself (from either build of
 * this package).
 *
 * ```ts
 * client.send('buy', dto).subscribe({ error: (e) => {
 *   const conflict = lockConflictOf(e);
 *   if (conflict?.code === 'CONFLICT') retryIn(conflict.retryAfterMs);
 * } });
 * ```
 *
 * @publicApi
 */
export function lockConflictOf(value: unknown): LockConflict | undefined {
  if (isRedlockError(value)) return conflictOf(value);
  if (typeof value !== 'object' || value === null) return undefined;
  const fields = value as Record<string, unknown>;
  if (looksLikeConflict(fields))
    return {
      name: fields.name,
      code: fields.code,
      statusCode: fields.statusCode,
      message: typeof fields.message === 'string' ? fields.message : '',
      reason: fields.reason,
      resources: fields.resources,
      retryAfterMs: fields.retryAfterMs,
    } as LockConflict;
  // A GraphQL error: the fields are its extensions, the message its own.
  const extensions = fields.extensions as Record<string, unknown> | undefined;
  if (typeof extensions === 'object' && extensions !== null)
    return lockConflictOf({ ...extensions, message: fields.message });
  return undefined;
}

/**
 * True when `value` (what a client received, or the server's error) is a
 * lock conflict; see {@link lockConflictOf}.
 *
 * @publicApi
 */
export function isLockConflict(value: unknown): boolean {
  return lockConflictOf(value) !== undefined;
}

function looksLikeConflict(fields: Record<string, unknown>): boolean {
  return (
    (fields.name === 'LockNotAcquiredError' ||
      fields.name === 'LockServiceUnavailableError') &&
    (fields.code === 'CONFLICT' || fields.code === 'SERVICE_UNAVAILABLE') &&
    Array.isArray(fields.resources) &&
    typeof fields.reason === 'string' &&
    typeof fields.retryAfterMs === 'number'
  );
}
