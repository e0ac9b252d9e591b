import { RedlockConfigError } from '../../errors/redlock-config.error.js';

/**
 * The longest duration an option may give, in ms (about 24.8 days): Node's
 * timers run a longer delay after 1 ms, so a "wait forever" such as
 * `Number.MAX_SAFE_INTEGER` would give up at once.
 */
export const MAX_DURATION_MS = 2_147_483_647;

/** Throws unless `value` is a finite number > 0. */
export function requirePositive(
  field: string,
  value: unknown,
): asserts value is number {
  const problem = durationProblem(value, 'positive');
  if (problem) throw new RedlockConfigError(field, problem);
}

/** Throws unless `value` is a finite number >= 0. */
export function requireNonNegative(
  field: string,
  value: unknown,
): asserts value is number {
  const problem = durationProblem(value, 'non-negative');
  if (problem) throw new RedlockConfigError(field, problem);
}

/** What is wrong with `value` as a duration in ms, or `undefined`. */
export function durationProblem(
  value: unknown,
  kind: 'positive' | 'non-negative',
): string | undefined {
  const above = kind === 'positive' ? '> 0' : '>= 0';
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (value === 0 && kind === 'positive')
  )
    return `must be a finite number ${above} (ms), got ${show(value)}`;
  if (value > MAX_DURATION_MS)
    return `must be at most ${MAX_DURATION_MS} ms (about 24.8 days, the longest timer Node sets), got ${show(value)}`;
  return undefined;
}

/** Validates a boolean option (`fencing`, `lazyConnect`): true, false or absent. */
export function optionalBoolean(
  field: string,
  value: unknown,
): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new RedlockConfigError(
    field,
    `must be true or false, got ${show(value)}`,
  );
}

/** A short, safe rendering of a bad value for error messages. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint'
  )
    return String(value);
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return `a ${typeof value === 'object' ? (value.constructor?.name ?? 'object') : typeof value}`;
}

/** A URL with its user and password masked (`redis://***@host`), for errors and names. */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
