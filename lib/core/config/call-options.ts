import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { requireNonNegative, requirePositive, show } from '../util/validate.js';
import { ON_LOCK_LOST } from './defaults.js';
import {
  CALL_OPTIONS,
  refuseUnknownOptions,
  WATCHDOG_OPTIONS,
} from './option-names.js';
import type { RunOptions, WatchdogOptions } from './options.js';

/**
 * Checks the options of `watch()`, naming the field: a `maxHold` that is
 * not a duration would end the hold at once or never.
 */
export function checkWatchdogOptions(
  options: WatchdogOptions | undefined,
  prefix = 'options.',
): void {
  if (typeof options === 'object' && options !== null)
    refuseUnknownOptions(options, WATCHDOG_OPTIONS, prefix);
  if (options?.maxHold !== undefined)
    requirePositive(`${prefix}maxHold`, options.maxHold);
  const onLost: unknown = options?.onLost;
  if (onLost !== undefined && typeof onLost !== 'function')
    throw new RedlockConfigError(
      `${prefix}onLost`,
      `must be a function, got ${show(onLost)}`,
    );
}

/**
 * Checks the options of `using()` / `run()` that the acquire does not read
 * (`maxHold`, `minHold`, `onLockLost`), so that bad ones fail before anything is
 * acquired: a misspelt `onLockLost` would otherwise mean `'ignore'`.
 */
export function checkRunOptions(
  options: RunOptions | undefined,
  prefix = 'options.',
): void {
  if (typeof options === 'object' && options !== null)
    refuseUnknownOptions(options, CALL_OPTIONS, prefix);
  checkWatchdogOptions({ maxHold: options?.maxHold }, prefix);
  if (options?.minHold !== undefined)
    requireNonNegative(`${prefix}minHold`, options.minHold);
  const onLockLost: unknown = options?.onLockLost;
  if (
    onLockLost !== undefined &&
    !(ON_LOCK_LOST as readonly unknown[]).includes(onLockLost)
  )
    throw new RedlockConfigError(
      `${prefix}onLockLost`,
      `must be ${ON_LOCK_LOST.map((v) => `'${v}'`).join(' or ')}, got ${show(onLockLost)}`,
    );
}

/**
 * Checks the `signal` of an acquire: anything else than an `AbortSignal`
 * would fail later, deep in the wait, with a message that names no option.
 * Duck-typed, as signals from another realm (a test VM, a polyfill) are
 * not instances of this one's class.
 */
export function checkSignalOption(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (
    typeof signal === 'object' &&
    signal !== null &&
    'aborted' in signal &&
    typeof signal.aborted === 'boolean' &&
    'addEventListener' in signal &&
    typeof signal.addEventListener === 'function' &&
    'removeEventListener' in signal &&
    typeof signal.removeEventListener === 'function'
  )
    return signal as AbortSignal;
  throw new RedlockConfigError(
    'options.signal',
    `must be an AbortSignal, got ${show(signal)}`,
  );
}
