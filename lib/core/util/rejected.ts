/**
 * A rejected promise for what a synchronous step threw, for functions that
 * return promises without being async (so that they never throw): an
 * `Error` as it is, anything else wrapped in one.
 */
export function rejected(error: unknown): Promise<never> {
  return Promise.reject(
    error instanceof Error ? error : new Error(String(error)),
  );
}
