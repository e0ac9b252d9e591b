import {
  checkOptions,
  REDLOCK_OPTION_RULES,
} from '../core/config/option-table.js';
import type { OptionRules } from '../core/config/rules.js';
import type { RedlockModuleOptions } from '../interfaces/redlock-module-options.interface.js';
import { retryAfter } from './locked-options.js';

/**
 * Every option `RedlockModule.forRoot()` and a `forRootAsync` factory
 * take, with its rule: the core's (`new Redlock()`) and `retryAfter`.
 * Checked against `RedlockModuleOptions` by the compiler.
 */
export const MODULE_OPTION_RULES = {
  ...REDLOCK_OPTION_RULES,
  retryAfter,
} satisfies OptionRules<RedlockModuleOptions>;

/**
 * Checks the module's options, names and values, naming the field in a
 * `RedlockConfigError`; what depends on several options (`quorum` and the
 * node count, `nodeTimeout` below `ttl`) is checked by the core when it
 * builds the lock set's `Redlock`.
 */
export function checkModuleOptions(options: RedlockModuleOptions): void {
  checkOptions(options, MODULE_OPTION_RULES, '');
}
