import type { RunOptions } from '../core/config/options.js';
import { ON_LOCK_LOST } from '../core/config/defaults.js';
import {
  CALL_OPTIONS,
  unknownOptionProblem,
} from '../core/config/option-names.js';
import { durationProblem, show } from '../core/util/validate.js';
import type { LockedOptions } from '../interfaces/locked-options.interface.js';
import { retryAfterProblem } from './retry-after.js';

const POSITIVE = ['ttl', 'nodeTimeout', 'maxHold'] as const;
const NON_NEGATIVE = [
  'waitTimeout',
  'retryDelay',
  'retryJitter',
  'minHold',
] as const;
const CHOICES = {
  onLockLost: ON_LOCK_LOST,
  onNotAcquired: ['throw', 'skip'],
  onUnavailable: ['throw', 'warn'],
  fencing: [true, false],
} as const;
/** The options only Nest has, beside the core's call options. */
const NEST_ONLY = [
  'onNotAcquired',
  'onUnavailable',
  'lockSet',
  'retryAfter',
] as const satisfies readonly (keyof LockedOptions)[];
/** Every name `@Locked` and `@LockKey` take: the core's call options but `signal`, and Nest's. */
export const LOCKED_OPTIONS: readonly (keyof LockedOptions)[] = [
  ...CALL_OPTIONS.filter(
    (name): name is Exclude<typeof name, 'signal'> => name !== 'signal',
  ),
  ...NEST_ONLY,
];
const complete: Exclude<
  keyof LockedOptions,
  (typeof CALL_OPTIONS)[number] | (typeof NEST_ONLY)[number]
> extends never
  ? true
  : never = true;
void complete;

/** Problems with per-decorator options, each naming the field (`options.ttl …`). */
export function checkLockedOptions(options: unknown): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return [`options must be an object, got ${show(options)}`];
  const o = options as Record<string, unknown>;
  const problems: string[] = [];
  for (const field of Object.keys(o))
    if (!(LOCKED_OPTIONS as readonly string[]).includes(field))
      problems.push(
        `options.${field}: ${unknownOptionProblem(field, LOCKED_OPTIONS)}`,
      );
  const durations = [
    ...POSITIVE.map((field) => [field, 'positive'] as const),
    ...NON_NEGATIVE.map((field) => [field, 'non-negative'] as const),
  ];
  for (const [field, kind] of durations) {
    const problem =
      o[field] === undefined ? undefined : durationProblem(o[field], kind);
    if (problem) problems.push(`options.${field} ${problem}`);
  }
  for (const [field, allowed] of Object.entries(CHOICES)) {
    const v = o[field];
    if (v !== undefined && !(allowed as readonly unknown[]).includes(v))
      problems.push(
        `options.${field} must be ${allowed.map((a) => (typeof a === 'string' ? `'${a}'` : String(a))).join(' or ')}, got ${show(v)}`,
      );
  }
  const retryAfter = retryAfterProblem(o.retryAfter);
  if (retryAfter) problems.push(`options.retryAfter ${retryAfter}`);
  if (
    o.lockSet !== undefined &&
    (typeof o.lockSet !== 'string' || o.lockSet.length === 0)
  )
    problems.push(
      `options.lockSet must be the name of a RedlockModule.forRoot({ name }) import, got ${show(o.lockSet)}`,
    );
  return problems;
}

/** The options the core's `run` understands (all but the Nest-only ones). */
export function toRunOptions({
  onNotAcquired: _,
  onUnavailable: __,
  lockSet: ___,
  retryAfter: ____,
  ...rest
}: LockedOptions): RunOptions {
  return rest;
}
