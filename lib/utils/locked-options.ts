import type { RunOptions } from '../core/config/options.js';
import {
  optionNames,
  optionProblems,
  RUN_OPTION_RULES,
} from '../core/config/option-table.js';
import { oneOf, type OptionRules, type Rule } from '../core/config/rules.js';
import { show } from '../core/util/validate.js';
import type { LockedOptions } from '../interfaces/locked-options.interface.js';
import { retryAfterProblem, type RetryAfter } from './retry-after.js';

/** The core's call options that `@Locked` takes: all but `signal` (a decorated method has no caller to abort it). */
const { signal: _signal, ...CORE_RULES } = RUN_OPTION_RULES;

const lockSet: Rule<string> = (value) =>
  typeof value === 'string' && value.length > 0
    ? undefined
    : `must be the name of a RedlockModule.forRoot({ name }) import, got ${show(value)}`;

/** `retryAfter` of `@Locked` and of the module options. */
export const retryAfter: Rule<RetryAfter> = retryAfterProblem;

/**
 * Every option `@Locked` and `@LockKey` take, with its rule: the core's
 * call options (the same rules as `LockService.run()`) and the ones only
 * Nest has. Checked against `LockedOptions` by the compiler.
 */
export const LOCKED_OPTION_RULES = {
  ...CORE_RULES,
  onNotAcquired: oneOf(['throw', 'skip']),
  onUnavailable: oneOf(['throw', 'warn']),
  lockSet,
  retryAfter,
} satisfies OptionRules<LockedOptions>;

/** Problems with per-decorator options, each naming the field (`options.ttl …`). */
export function checkLockedOptions(options: unknown): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return [`options must be an object, got ${show(options)}`];
  return optionProblems(options, LOCKED_OPTION_RULES);
}

const RUN_NAMES = optionNames(
  CORE_RULES,
) as readonly (keyof typeof CORE_RULES)[];

/** The options the core's `run` understands (those of `RUN_OPTION_RULES`: all but the Nest-only ones). */
export function toRunOptions(options: LockedOptions): RunOptions {
  const run: Record<string, unknown> = {};
  for (const name of RUN_NAMES)
    if (options[name] !== undefined) run[name] = options[name];
  return run;
}
