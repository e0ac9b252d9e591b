import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { breaksTags, taggedKey } from '../util/hash-tag.js';
import { show } from '../util/validate.js';
import { isClusterConfig } from './clients.js';
import { REDLOCK_DEFAULTS } from './defaults.js';
import {
  CLOCK_MONITOR_OPTION_RULES,
  checkOptions,
  REDLOCK_OPTION_RULES,
} from './option-table.js';
import type {
  AcquireOptions,
  ClockMonitorOptions,
  RedlockOptions,
} from './options.js';
import { resolveTiming, type ResolvedTiming } from './timing.js';

/** The node-clock monitor's settings, resolved (see `RedlockOptions.clockMonitor`). */
export interface ClockMonitorSettings {
  /** Time between two readings of each node's clock, in ms. */
  readonly interval: number;
  /** How long a node stays out after its last reading out of bounds, in ms. */
  readonly exclusion: number;
}

/** The settings of a `Redlock` instance, with defaults filled in and checked. */
export interface RedlockConfig {
  readonly driftFactor: number;
  /** The instance's timing; calls override it (see `callTiming`). */
  readonly timing: ResolvedTiming;
  readonly keyPrefix: string;
  readonly metaPrefix: string;
  /** Keys carry hash tags (see `RedlockOptions.hashTags`). */
  readonly hashTags: boolean;
  /** The lock key of a resource. */
  readonly keyOf: (resource: string) => string;
  readonly quorum: number;
  readonly fencing: boolean;
  readonly localHandoff: number;
  readonly lazyConnect: boolean;
  readonly closeClients: boolean;
  readonly restartQuarantine: number;
  readonly shutdownTimeout: number;
  /** The node-clock monitor's settings; `undefined` when it is off. */
  readonly clockMonitor?: ClockMonitorSettings;
  readonly recreateOnExtend: boolean;
  /** The options it was resolved from (calls override their timing). */
  readonly options: RedlockOptions;
  /** Timings of calls with their own options, by their values (see `callTiming`). */
  readonly callTimings: CallTiming[];
}

/** One call's timing options and what they resolved to (see `callTiming`). */
interface CallTiming {
  readonly ttl: unknown;
  readonly waitTimeout: unknown;
  readonly retryDelay: unknown;
  readonly retryJitter: unknown;
  readonly nodeTimeout: unknown;
  readonly prefix: string;
  readonly timing: ResolvedTiming;
}

/** Distinct per-call timings remembered per instance (the oldest goes first). */
const CALL_TIMINGS = 4;

/**
 * Validates a `Redlock`'s options, naming the field at fault in a
 * `RedlockConfigError`, and fills in the defaults (`REDLOCK_DEFAULTS`). The
 * clients are checked when the nodes are created (`createNodes`); an empty
 * list leaves the quorum unchecked here, so that error names `clients`.
 */
export function resolveRedlockConfig(options: RedlockOptions): RedlockConfig {
  if (typeof options !== 'object' || options === null) {
    throw new RedlockConfigError(
      'options',
      `must be an object, got ${show(options)}`,
    );
  }
  // Names, and each value on its own (REDLOCK_OPTION_RULES); below, what
  // depends on other options.
  checkOptions(options, REDLOCK_OPTION_RULES, '');
  const driftFactor = options.driftFactor ?? REDLOCK_DEFAULTS.driftFactor;
  const timing = resolveTiming(options, undefined, driftFactor);
  const keyPrefix = options.keyPrefix ?? REDLOCK_DEFAULTS.keyPrefix;
  const metaPrefix = options.metaPrefix ?? REDLOCK_DEFAULTS.metaPrefix;
  if (metaPrefix.startsWith(keyPrefix) || keyPrefix.startsWith(metaPrefix)) {
    throw new RedlockConfigError(
      'metaPrefix',
      `"${metaPrefix}" and keyPrefix "${keyPrefix}" must not start with one another, or a resource name could map onto the library's own keys`,
    );
  }
  const hashTags =
    options.hashTags ??
    (Array.isArray(options.clients) && options.clients.some(isClusterConfig));
  if (hashTags)
    for (const [field, prefix] of [
      ['keyPrefix', keyPrefix],
      ['metaPrefix', metaPrefix],
    ])
      if (breaksTags(prefix))
        throw new RedlockConfigError(
          field,
          `"${prefix}" must not hold "{" or "}" with hash tags (a Redis Cluster node): the library puts each resource's hash tag in its keys`,
        );
  const count = Array.isArray(options.clients) ? options.clients.length : 0;
  const quorum = options.quorum ?? Math.floor(count / 2) + 1;
  if (
    count > 0 &&
    (!Number.isInteger(quorum) || quorum <= count / 2 || quorum > count)
  ) {
    throw new RedlockConfigError(
      'quorum',
      `must be an integer above N/2 and at most N (N = ${count}: ${Math.floor(count / 2) + 1}..${count}), got ${show(options.quorum)}`,
    );
  }
  return {
    driftFactor,
    timing,
    keyPrefix,
    metaPrefix,
    hashTags,
    keyOf: hashTags
      ? (resource) => taggedKey(keyPrefix, resource)
      : (resource) => keyPrefix + resource,
    quorum,
    fencing: options.fencing ?? REDLOCK_DEFAULTS.fencing,
    localHandoff: options.localHandoff ?? REDLOCK_DEFAULTS.localHandoff,
    lazyConnect: options.lazyConnect ?? REDLOCK_DEFAULTS.lazyConnect,
    closeClients: options.closeClients ?? REDLOCK_DEFAULTS.closeClients,
    restartQuarantine:
      options.restartQuarantine ?? REDLOCK_DEFAULTS.restartQuarantine,
    shutdownTimeout:
      options.shutdownTimeout ?? REDLOCK_DEFAULTS.shutdownTimeout,
    clockMonitor: resolveClockMonitor(options.clockMonitor, timing.ttl),
    recreateOnExtend:
      options.recreateOnExtend ?? REDLOCK_DEFAULTS.recreateOnExtend,
    options,
    callTimings: [],
  };
}

/** `clockMonitor`: off, on with the defaults (`true`), or its settings (the shape is checked with the other options). */
function resolveClockMonitor(
  value: boolean | ClockMonitorOptions | undefined,
  ttl: number,
): ClockMonitorSettings | undefined {
  if (value === undefined || value === false) return undefined;
  const settings = value === true ? {} : value;
  checkOptions(settings, CLOCK_MONITOR_OPTION_RULES, 'clockMonitor.');
  return {
    interval: settings.interval ?? REDLOCK_DEFAULTS.clockMonitorInterval,
    exclusion: settings.exclusion ?? ttl,
  };
}

/**
 * Timing for one call: the instance's, overridden by the call's options.
 * `prefix` names where they came from in errors (`''` for `lock.extend(ttl)`'s argument).
 */
export function callTiming(
  config: RedlockConfig,
  options?: AcquireOptions,
  prefix = 'options.',
): ResolvedTiming {
  if (options === undefined) return config.timing;
  if (typeof options !== 'object' || options === null) {
    throw new RedlockConfigError(
      'options',
      `must be an object, got ${show(options)}`,
    );
  }
  const { ttl, waitTimeout, retryDelay, retryJitter, nodeTimeout } = options;
  if (
    ttl === undefined &&
    nodeTimeout === undefined &&
    waitTimeout === undefined &&
    retryDelay === undefined &&
    retryJitter === undefined
  ) {
    return config.timing;
  }
  // Applications pass the same few option values on every call (often a
  // new object each time): merging and validating them again allocated
  // about 180 bytes per lock (docs/performance.md). Timing depends only on
  // these values, so a strictly equal set reuses its result (one that
  // failed validation is never remembered).
  const seen = config.callTimings;
  for (let i = 0; i < seen.length; i++) {
    const c = seen[i];
    if (
      c.ttl === ttl &&
      c.waitTimeout === waitTimeout &&
      c.retryDelay === retryDelay &&
      c.retryJitter === retryJitter &&
      c.nodeTimeout === nodeTimeout &&
      c.prefix === prefix
    )
      return c.timing;
  }
  const timing = resolveTiming(
    config.options,
    { ttl, waitTimeout, retryDelay, retryJitter, nodeTimeout },
    config.driftFactor,
    prefix,
  );
  if (seen.length === CALL_TIMINGS) seen.shift();
  seen.push({
    ttl,
    waitTimeout,
    retryDelay,
    retryJitter,
    nodeTimeout,
    prefix,
    timing,
  });
  return timing;
}
