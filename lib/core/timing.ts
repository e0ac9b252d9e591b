import { RedlockConfigError } from '../errors/redlock-config.error.js';
import { REDLOCK_DEFAULTS, type LockTimingOptions } from './redlock-options.js';

/** Timing of one lock operation with every default filled in and checked. */
export interface ResolvedTiming {
  readonly ttl: number;
  readonly waitTimeout: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  readonly nodeTimeout: number;
  /** The clock drift allowance subtracted from validity: ttl * driftFactor + 2 ms. */
  readonly drift: number;
}

/**
 * Merges per-call timing over the module's and validates the result, naming
 * the field at fault. `prefix` names where the value came from (`options.` for
 * per-call options).
 */
export function resolveTiming(
  base: LockTimingOptions,
  override: LockTimingOptions | undefined,
  driftFactor: number,
  prefix = '',
): ResolvedTiming {
  const pick = <K extends keyof LockTimingOptions>(key: K) =>
    override?.[key] !== undefined ? override[key] : base[key];
  const ttl = pick('ttl') ?? REDLOCK_DEFAULTS.ttl;
  requirePositive(`${prefix}ttl`, ttl);
  const waitTimeout = pick('waitTimeout') ?? REDLOCK_DEFAULTS.waitTimeout;
  requireNonNegative(`${prefix}waitTimeout`, waitTimeout);
  const retryDelay = pick('retryDelay') ?? REDLOCK_DEFAULTS.retryDelay;
  requireNonNegative(`${prefix}retryDelay`, retryDelay);
  const retryJitter = pick('retryJitter') ?? REDLOCK_DEFAULTS.retryJitter;
  requireNonNegative(`${prefix}retryJitter`, retryJitter);
  const explicitNodeTimeout = pick('nodeTimeout');
  let nodeTimeout: number;
  if (explicitNodeTimeout === undefined) {
    nodeTimeout = Math.min(
      REDLOCK_DEFAULTS.maxDefaultNodeTimeout,
      Math.max(1, ttl / 10),
    );
  } else {
    const fromCall = override?.nodeTimeout !== undefined;
    requirePositive(
      `${fromCall ? prefix : ''}nodeTimeout`,
      explicitNodeTimeout,
    );
    if (explicitNodeTimeout >= ttl) {
      // Name the option the caller can change: the one this call set.
      const field =
        fromCall || override?.ttl === undefined
          ? `${fromCall ? prefix : ''}nodeTimeout`
          : `${prefix}ttl`;
      throw new RedlockConfigError(
        field,
        `nodeTimeout (${explicitNodeTimeout} ms) must be below ttl (${ttl} ms): a node timeout near the lease leaves no validity`,
      );
    }
    nodeTimeout = explicitNodeTimeout;
  }
  return {
    ttl,
    waitTimeout,
    retryDelay,
    retryJitter,
    nodeTimeout,
    drift: clockDrift(ttl, driftFactor),
  };
}

/** The clock drift allowance of a lease of `ttl` ms: `ttl * driftFactor + 2` ms. */
export function clockDrift(ttl: number, driftFactor: number): number {
  return ttl * driftFactor + 2;
}

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

/**
 * The longest duration an option may give, in ms (about 24.8 days): Node's
 * timers run a longer delay after 1 ms, so a "wait forever" such as
 * `Number.MAX_SAFE_INTEGER` would give up at once.
 */
export const MAX_DURATION_MS = 2_147_483_647;

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
