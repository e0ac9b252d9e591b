import { RedlockError } from './redlock.error.js';

/**
 * A guarded write was refused because its fencing token is older than one
 * the store already accepted for the resource: a newer holder has written
 * since, so this holder's lock was lost (its lease ran out, typically while
 * the process was paused). Nothing of the refused write was applied; the
 * holder must not report its work as done.
 *
 * @publicApi
 */
export class StaleFencingTokenError extends RedlockError {
  /** HTTP status a controller may answer with: 409 Conflict. */
  readonly statusCode = 409;

  constructor(
    /** The resource the token was issued for. */
    readonly resource: string,
    /** The refused token. */
    readonly token: string,
    /** The highest token the store has accepted for the resource. */
    readonly highest: string,
  ) {
    super(
      `Stale fencing token for "${resource}": ${token} is older than ${highest}, already accepted from a newer holder (this holder's lock was lost); the write was not applied`,
    );
  }
}
