import { RedlockError } from './redlock.error.js';

/**
 * A module option, call option or argument is invalid. Thrown before any
 * Redis call; `field` names the option or argument to change.
 *
 * @publicApi
 */
export class RedlockConfigError extends RedlockError {
  constructor(
    /** The option or argument at fault, e.g. `ttl` or `clients[1]`. */
    readonly field: string,
    problem: string,
  ) {
    super(`Invalid ${field}: ${problem}`);
  }
}
