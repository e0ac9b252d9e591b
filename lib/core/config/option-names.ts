import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { closest } from '../util/closest.js';
import type {
  ClockMonitorOptions,
  LockTimingOptions,
  RedlockOptions,
  RunOptions,
  WatchdogOptions,
} from './options.js';

/**
 * The names each entry point takes, in one place: a misspelt option is
 * refused with the nearest name rather than ignored (a misspelt
 * `waitTimeout` read from configuration would otherwise silently become
 * the default). Each list is checked against its type below, so an option
 * added to a type and not here fails to compile.
 */
export const TIMING_OPTIONS = [
  'ttl',
  'waitTimeout',
  'retryDelay',
  'retryJitter',
  'nodeTimeout',
] as const satisfies readonly (keyof LockTimingOptions)[];

/** Per call: `acquire`, `tryAcquire`, `run`, `using`, `hold` (a superset: `acquire` ignores the watchdog's). */
export const CALL_OPTIONS = [
  ...TIMING_OPTIONS,
  'signal',
  'fencing',
  'onLockLost',
  'maxHold',
  'minHold',
] as const satisfies readonly (keyof RunOptions)[];

/** `new Redlock(options)`. */
export const REDLOCK_OPTIONS = [
  ...TIMING_OPTIONS,
  'clients',
  'driftFactor',
  'keyPrefix',
  'hashTags',
  'metaPrefix',
  'fencing',
  'quorum',
  'clock',
  'waitStrategy',
  'localHandoff',
  'logger',
  'lazyConnect',
  'closeClients',
  'restartQuarantine',
  'shutdownTimeout',
  'clockMonitor',
  'recreateOnExtend',
] as const satisfies readonly (keyof RedlockOptions)[];

export const CLOCK_MONITOR_OPTIONS = [
  'interval',
  'exclusion',
] as const satisfies readonly (keyof ClockMonitorOptions)[];

export const WATCHDOG_OPTIONS = [
  'maxHold',
  'onLost',
] as const satisfies readonly (keyof WatchdogOptions)[];

/** Compiles only when `Names` lists every key of `T`. */
type Lists<T, Names extends readonly PropertyKey[]> = [
  Exclude<keyof T, Names[number]>,
] extends [never]
  ? true
  : { missing: Exclude<keyof T, Names[number]> };
const complete: [
  Lists<RunOptions, typeof CALL_OPTIONS>,
  Lists<RedlockOptions, typeof REDLOCK_OPTIONS>,
  Lists<ClockMonitorOptions, typeof CLOCK_MONITOR_OPTIONS>,
  Lists<WatchdogOptions, typeof WATCHDOG_OPTIONS>,
] = [true, true, true, true];
void complete;

const sets = new WeakMap<readonly string[], ReadonlySet<string>>();

/**
 * Throws `RedlockConfigError` naming the first own property of `options`
 * that `known` does not list, with the nearest known name. Properties set
 * to `undefined` count too: `{ waitTimout: undefined }` is a typo all the same.
 */
export function refuseUnknownOptions(
  options: object,
  known: readonly string[],
  prefix = 'options.',
): void {
  let names = sets.get(known);
  if (!names) sets.set(known, (names = new Set(known)));
  for (const name in options) {
    if (names.has(name) || !Object.hasOwn(options, name)) continue;
    throw new RedlockConfigError(
      `${prefix}${name}`,
      unknownOptionProblem(name, known),
    );
  }
}

/** Why `name` is refused: not among `known`, with the nearest known name. */
export function unknownOptionProblem(
  name: string,
  known: readonly string[],
): string {
  const near = closest(name, known);
  return `'${name}' is not an option${near ? `; did you mean '${near}'?` : ''} (known: ${known.join(', ')})`;
}
