import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { closest } from '../util/closest.js';
import type { Clock } from '../util/clock.js';
import { show } from '../util/validate.js';
import { LOCK_MODES, ON_LOCK_LOST } from './defaults.js';
import type {
  AcquireOptions,
  ClockMonitorOptions,
  LockTimingOptions,
  RedisNodeConfig,
  RedlockLogger,
  RedlockOptions,
  RunOptions,
  WatchdogOptions,
} from './options.js';
import {
  abortSignal,
  callback,
  flag,
  inContext,
  nonNegativeMs,
  oneOf,
  permitCount,
  positiveMs,
  text,
  unchecked,
  type OptionRules,
  type Rule,
} from './rules.js';
import type { WaitStrategy } from './wait-strategy.js';

/*
 * The options each entry point takes, one table per options type: its
 * names (a misspelt option is refused with the nearest name rather than
 * ignored: a misspelt `waitTimeout` read from configuration would
 * otherwise silently become the default) and the rule each value must
 * follow. `satisfies OptionRules<T>` makes the compiler hold each table to
 * its type: a field added to the type without a rule, or a rule for no
 * field, fails to compile. The order is the one of `known: ...` in errors.
 */

/** Timing, per instance and per call. */
export const TIMING_OPTION_RULES = {
  ttl: positiveMs,
  waitTimeout: nonNegativeMs,
  retryDelay: nonNegativeMs,
  retryJitter: nonNegativeMs,
  nodeTimeout: positiveMs,
} satisfies OptionRules<LockTimingOptions>;

/** `acquire()`, `tryAcquire()`. */
export const ACQUIRE_OPTION_RULES = {
  ...TIMING_OPTION_RULES,
  signal: abortSignal,
  fencing: flag,
  permits: permitCount,
  mode: oneOf(LOCK_MODES),
} satisfies OptionRules<AcquireOptions>;

/**
 * `run()`, `using()`, `hold()`; and `acquire()`, `tryAcquire()`, which
 * take these too (ignoring the watchdog's), as `run()` hands its options
 * to the acquire: every call checks its options against this table, once.
 */
export const RUN_OPTION_RULES = {
  ...ACQUIRE_OPTION_RULES,
  onLockLost: oneOf(ON_LOCK_LOST),
  maxHold: positiveMs,
  minHold: nonNegativeMs,
} satisfies OptionRules<RunOptions>;

/** `watch()`. */
export const WATCHDOG_OPTION_RULES = {
  maxHold: positiveMs,
  onLost: callback<Exclude<WatchdogOptions['onLost'], undefined>>(),
} satisfies OptionRules<WatchdogOptions>;

/** `clockMonitor: { ... }` of `new Redlock()`. */
export const CLOCK_MONITOR_OPTION_RULES = {
  interval: positiveMs,
  exclusion: nonNegativeMs,
} satisfies OptionRules<ClockMonitorOptions>;

const driftFactor: Rule<number> = (value) =>
  typeof value === 'number' && value >= 0 && value < 0.5
    ? undefined
    : `must be a number in [0, 0.5), got ${show(value)}`;

const localHandoff: Rule<number> = (value) =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0
    ? undefined
    : `must be an integer >= 0 (0 disables the in-process handoff), got ${show(value)}`;

/** Its fields are checked against {@link CLOCK_MONITOR_OPTION_RULES} where it is resolved. */
const clockMonitor: Rule<boolean | ClockMonitorOptions> = (value) =>
  typeof value === 'boolean' ||
  (typeof value === 'object' && value !== null && !Array.isArray(value))
    ? undefined
    : `must be true, false or { interval?, exclusion? }, got ${show(value)}`;

/** `new Redlock(options)`. */
export const REDLOCK_OPTION_RULES = {
  ...TIMING_OPTION_RULES,
  clients: inContext<RedisNodeConfig[]>(),
  driftFactor,
  keyPrefix: text,
  hashTags: flag,
  metaPrefix: text,
  fencing: flag,
  quorum: inContext<number>(),
  clock: unchecked<Clock>(),
  waitStrategy: unchecked<WaitStrategy>(),
  localHandoff,
  logger: unchecked<RedlockLogger>(),
  lazyConnect: flag,
  closeClients: flag,
  restartQuarantine: nonNegativeMs,
  shutdownTimeout: nonNegativeMs,
  clockMonitor,
  recreateOnExtend: flag,
} satisfies OptionRules<RedlockOptions>;

/** Any table of rules. */
export type OptionTable = {
  readonly [name: string]: (value: unknown) => string | undefined;
};

interface Compiled {
  readonly names: readonly string[];
  readonly known: ReadonlySet<string>;
  readonly rules: readonly (readonly [
    string,
    (value: unknown) => string | undefined,
  ])[];
}
const compiled = new WeakMap<OptionTable, Compiled>();

function compile(table: OptionTable): Compiled {
  let c = compiled.get(table);
  if (!c) {
    const names = Object.keys(table);
    c = { names, known: new Set(names), rules: Object.entries(table) };
    compiled.set(table, c);
  }
  return c;
}

/** The names a table lists, in its order. */
export function optionNames(table: OptionTable): readonly string[] {
  return compile(table).names;
}

/**
 * Checks `options` against `table`: throws `RedlockConfigError` naming the
 * first own property the table does not list, with the nearest known name
 * (properties set to `undefined` count too: `{ waitTimout: undefined }` is
 * a typo all the same), else the first option, in the table's order, whose
 * value its rule refuses. `prefix` comes before the name in the field
 * (`options.` for a call's options).
 */
export function checkOptions(
  options: object,
  table: OptionTable,
  prefix = 'options.',
): void {
  const { known, names, rules } = compile(table);
  for (const name in options) {
    if (known.has(name) || !Object.hasOwn(options, name)) continue;
    throw new RedlockConfigError(
      `${prefix}${name}`,
      unknownOptionProblem(name, names),
    );
  }
  const values = options as Record<string, unknown>;
  for (let i = 0; i < rules.length; i++) {
    const [name, rule] = rules[i];
    const value = values[name];
    if (value === undefined) continue;
    const problem = rule(value);
    if (problem !== undefined)
      throw new RedlockConfigError(`${prefix}${name}`, problem);
  }
}

/**
 * Every problem of `options` against `table`, each naming its field, for a
 * check that reports them all at once (`@Locked`, at bootstrap): unknown
 * names first (`options.tll: 'tll' is not an option; ...`), then refused
 * values in the table's order (`options.ttl must be ...`).
 */
export function optionProblems(
  options: object,
  table: OptionTable,
  prefix = 'options.',
): string[] {
  const { known, names, rules } = compile(table);
  const problems: string[] = [];
  for (const name of Object.keys(options))
    if (!known.has(name))
      problems.push(`${prefix}${name}: ${unknownOptionProblem(name, names)}`);
  const values = options as Record<string, unknown>;
  for (const [name, rule] of rules) {
    const value = values[name];
    const problem = value === undefined ? undefined : rule(value);
    if (problem !== undefined) problems.push(`${prefix}${name} ${problem}`);
  }
  return problems;
}

/** Why `name` is refused: not among `known`, with the nearest known name. */
export function unknownOptionProblem(
  name: string,
  known: readonly string[],
): string {
  const near = closest(name, known);
  return `'${name}' is not an option${near ? `; did you mean '${near}'?` : ''} (known: ${known.join(', ')})`;
}
