import { RedlockError } from './redlock.error.js';

/**
 * A nested call asked for the write side of a read/write lock on a
 * resource that an enclosing call of the same async call chain holds for
 * reading (`mode: 'read'`). The write would wait for every reader to
 * leave, its own enclosing call among them, which waits for it: a
 * deadlock. It is refused at once instead, before any Redis call, and the
 * nested call's work is not run. Take the write side in the outer call (a
 * read inside a write joins it), or run the write outside the read. A
 * programming error: not caught by `LockConflictFilter` (HTTP 500).
 *
 * @publicApi
 */
export class LockUpgradeError extends RedlockError {
  constructor(
    /** The resource asked for (not prefixed). */
    readonly resource: string,
    /** What was called: `@Locked Class.method`, `@LockKey Class.method` or `LockService.run`. */
    readonly method: string,
  ) {
    super(
      `${method} cannot lock "${resource}" for writing: an enclosing call of the same call chain holds it for reading, and a write waits for every reader to leave, that call too, which waits for this one. Take it for writing in the outer call (a read inside a write joins it), or write outside the read. It was not run.`,
    );
  }
}
