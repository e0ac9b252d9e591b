import { RedlockError } from './redlock.error.js';

/**
 * Why a lock could not be asked for at all (see
 * {@link LockServiceUnavailableError}):
 * - `shutdown`: the application is closing (`app.close()` or a shutdown
 *   signal): no new lock is taken.
 * - `unmanaged`: a `@Locked` method was called on an instance that has no
 *   `LockService` (made with `new`, or called from its own constructor).
 * - `detached`: a `@Locked` method was called without its instance as `this`.
 *
 * @publicApi
 */
export type LockServiceUnavailableReason =
  'shutdown' | 'unmanaged' | 'detached';

const MESSAGES: Record<
  LockServiceUnavailableReason,
  (caller: string) => string
> = {
  shutdown: (caller) =>
    `${caller} was refused: the application is shutting down (app.close() or a shutdown signal), and takes no new locks. Retry on another replica. It was not run.`,
  unmanaged: (caller) =>
    `${caller} was called on an instance that has no LockService: it was created with \`new\` instead of by Nest, or called from its own constructor. Let Nest create it (a provider of a module under RedlockModule). It was not run.`,
  detached: (caller) =>
    `${caller} was called without its instance as \`this\` (a detached call such as \`const f = svc.method; f()\`, \`setTimeout(svc.method)\` or \`list.map(svc.method)\`); call it as svc.method(...) or bind it. It was not run.`,
};

/**
 * A lock could not even be asked for: the application is shutting down
 * (HTTP 503, see `LockConflictFilter`), or a `@Locked` method was called on
 * an object that has no `LockService`. The work is not run: it never runs
 * unlocked.
 *
 * @publicApi
 */
export class LockServiceUnavailableError extends RedlockError {
  /** 503 while shutting down (try another replica); 500 for the programming errors. */
  readonly statusCode: 500 | 503;

  constructor(
    /** What was called: `@Locked Class.method`, or a `LockService` method. */
    readonly method: string,
    /** Why (see {@link LockServiceUnavailableReason}). */
    readonly reason: LockServiceUnavailableReason,
  ) {
    super(MESSAGES[reason](method));
    this.statusCode = reason === 'shutdown' ? 503 : 500;
  }
}
