import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { REDLOCK_DEFAULTS } from './defaults.js';
import { TIMING_OPTION_RULES as RULES } from './option-table.js';
import type { LockTimingOptions } from './options.js';
import { requireRule } from './rules.js';

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
 * the field at fault: each value by its rule (`TIMING_OPTION_RULES`), then
 * what depends on two of them. `prefix` names where the value came from (`options.` for
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
  requireRule(RULES.ttl, `${prefix}ttl`, ttl);
  // A lease no longer than the drift allowance can never leave validity:
  // every attempt would fail, reported as an outage or expiry, never as this.
  const drift = clockDrift(ttl, driftFactor);
  if (ttl <= drift)
    throw new RedlockConfigError(
      `${prefix}ttl`,
      `must be above the clock drift allowance (ttl * driftFactor + 2 ms = ${drift} ms), or no lock is ever valid, got ${ttl}`,
    );
  const waitTimeout = pick('waitTimeout') ?? REDLOCK_DEFAULTS.waitTimeout;
  requireRule(RULES.waitTimeout, `${prefix}waitTimeout`, waitTimeout);
  const retryDelay = pick('retryDelay') ?? REDLOCK_DEFAULTS.retryDelay;
  requireRule(RULES.retryDelay, `${prefix}retryDelay`, retryDelay);
  const retryJitter = pick('retryJitter') ?? REDLOCK_DEFAULTS.retryJitter;
  requireRule(RULES.retryJitter, `${prefix}retryJitter`, retryJitter);
  const explicitNodeTimeout = pick('nodeTimeout');
  let nodeTimeout: number;
  if (explicitNodeTimeout === undefined) {
    nodeTimeout = Math.min(
      REDLOCK_DEFAULTS.maxDefaultNodeTimeout,
      Math.max(1, ttl / 10),
    );
  } else {
    const fromCall = override?.nodeTimeout !== undefined;
    requireRule(
      RULES.nodeTimeout,
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
    drift,
  };
}

/** The clock drift allowance of a lease of `ttl` ms: `ttl * driftFactor + 2` ms. */
export function clockDrift(ttl: number, driftFactor: number): number {
  return ttl * driftFactor + 2;
}

/** Until when a lease of `ttl` ms that nodes set after `start` is held, on our clock. */
export function leaseDeadline(
  start: number,
  ttl: number,
  driftFactor: number,
): number {
  return start + ttl - clockDrift(ttl, driftFactor);
}

/**
 * How long a waiter's place in the nodes' wait queues lives unless an
 * attempt renews it: twice its longest sleep between attempts, plus room
 * for a stalled event loop. Short, because a waiter that dies in the queue
 * may still be given a key for its whole lease until then (a live waiter
 * that overstays only loses its place, and asks again).
 */
export function queueLife(timing: ResolvedTiming): number {
  return Math.ceil(
    2 * (timing.retryDelay + timing.retryJitter + timing.nodeTimeout) + 250,
  );
}
