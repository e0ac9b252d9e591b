import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { show } from '../util/validate.js';
import {
  checkOptions,
  RUN_OPTION_RULES,
  WATCHDOG_OPTION_RULES,
} from './option-table.js';
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
    checkOptions(options, WATCHDOG_OPTION_RULES, prefix);
}

/**
 * Checks the options of a call against `RUN_OPTION_RULES`, names and
 * values, before anything is acquired: a misspelt `onLockLost` would
 * otherwise mean `'ignore'`. Each public call checks its options once:
 * `acquire()` and `tryAcquire()` when they resolve the call (`using()` and
 * `run()` through them), `hold()` itself.
 */
export function checkRunOptions(
  options: RunOptions | undefined,
  prefix = 'options.',
): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null)
    throw new RedlockConfigError(
      'options',
      `must be an object, got ${show(options)}`,
    );
  checkOptions(options, RUN_OPTION_RULES, prefix);
}
