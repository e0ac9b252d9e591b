/**
 * Brand carried by every error of this library. Two copies of the package
 * (its CommonJS and ESM builds) can load in one process, and then
 * `instanceof` fails across them; the brand, keyed with `Symbol.for`, does not.
 */
export const REDLOCK_ERROR_BRAND = Symbol.for('nestjs-redlock:error');

/**
 * Base class of the library's errors. `name` is always the concrete class name.
 *
 * @publicApi
 */
export abstract class RedlockError extends Error {
  readonly [REDLOCK_ERROR_BRAND] = true;

  // `{ cause }` spelled out rather than ES2022's `ErrorOptions`: the
  // published typings compile in apps whose `lib` stops at ES2021.
  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * True when `error` is a {@link RedlockError} with the given `name`, from
 * this copy of the package or another one.
 *
 * @publicApi
 */
export function isRedlockError(
  error: unknown,
  name?: string,
): error is RedlockError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[REDLOCK_ERROR_BRAND] === true &&
    (name === undefined || (error as Error).name === name)
  );
}
