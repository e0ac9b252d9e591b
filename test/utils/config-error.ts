import { expect } from '@jest/globals';
import { RedlockConfigError } from 'nestjs-redlock';

/** The `RedlockConfigError` `fn` throws (the test fails if it throws anything else, or nothing). */
export function configError(fn: () => unknown): RedlockConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RedlockConfigError);
    return error as RedlockConfigError;
  }
  throw new Error('expected a RedlockConfigError');
}
