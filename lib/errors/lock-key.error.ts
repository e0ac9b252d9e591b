import { RedlockError } from './redlock.error.js';

/**
 * A lock key could not be built from a call's arguments: a placeholder
 * resolved to `undefined`, `null`, an object, an empty string or an empty
 * list, or a key function returned no usable resource. Thrown before the
 * method runs and before any Redis call.
 *
 * @publicApi
 */
export class LockKeyError extends RedlockError {
  constructor(
    /** The locked method, as `Class.method`. */
    readonly method: string,
    /** The placeholder (`<dto.sku>`) or `key function` at fault. */
    readonly placeholder: string,
    /** What it got, in words. */
    readonly problem: string,
  ) {
    super(`Cannot build the lock key of ${method}: ${placeholder} ${problem}`);
  }
}
