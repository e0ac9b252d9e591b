import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { durationProblem, show } from '../util/validate.js';

/**
 * How one option's value is checked: what is wrong with it (a sentence
 * starting with "must", as in `Invalid ttl: must be ...`), or `undefined`.
 * Never called with `undefined` (an option left out). `T` is the type of
 * the option, for the compiler only: a table of rules is checked against
 * its options type (see {@link OptionRules}), so a rule for a number cannot
 * stand for a boolean.
 */
export interface Rule<T> {
  (value: unknown): string | undefined;
  /** Never set: ties the rule to the option's type (invariant in `T`). */
  readonly type?: (value: T) => T;
}

/**
 * The rules of one options type: every option of `T`, and nothing else
 * (with `satisfies`), each with a rule for its type. An option added to
 * the type without a rule, or a rule for no option, fails to compile.
 */
export type OptionRules<T> = {
  readonly [K in keyof T]-?: Rule<Exclude<T[K], undefined>>;
};

/** A duration in ms, > 0 (`ttl`, `nodeTimeout`, `maxHold`). */
export const positiveMs: Rule<number> = (value) =>
  durationProblem(value, 'positive');

/** A duration in ms, >= 0 (`waitTimeout`, `minHold`, `shutdownTimeout`). */
export const nonNegativeMs: Rule<number> = (value) =>
  durationProblem(value, 'non-negative');

/** Most permits a semaphore may have: each is a key on every node, and an acquire may try each once. */
export const MAX_PERMITS = 1024;

/** A permit count: an integer from 1 to {@link MAX_PERMITS}. */
export const permitCount: Rule<number> = (value) =>
  typeof value === 'number' &&
  Number.isInteger(value) &&
  value >= 1 &&
  value <= MAX_PERMITS
    ? undefined
    : `must be an integer from 1 to ${MAX_PERMITS}, got ${show(value)}`;

/** `true` or `false`. */
export const flag: Rule<boolean> = (value) =>
  typeof value === 'boolean'
    ? undefined
    : `must be true or false, got ${show(value)}`;

/** A string (a key prefix). */
export const text: Rule<string> = (value) =>
  typeof value === 'string'
    ? undefined
    : `must be a string, got ${show(value)}`;

const isFunction = (value: unknown): string | undefined =>
  typeof value === 'function'
    ? undefined
    : `must be a function, got ${show(value)}`;

/** A function (a callback such as `onLost`). */
export function callback<T extends (...args: never[]) => unknown>(): Rule<T> {
  return isFunction;
}

/** One of `values`: `must be 'throw' or 'ignore', got ...`. */
export function oneOf<const T extends string | boolean>(
  values: readonly T[],
): Rule<T> {
  const listed = values
    .map((v) => (typeof v === 'string' ? `'${v}'` : String(v)))
    .join(' or ');
  return (value) =>
    (values as readonly unknown[]).includes(value)
      ? undefined
      : `must be ${listed}, got ${show(value)}`;
}

/**
 * An `AbortSignal`. Duck-typed, as signals from another realm (a test VM,
 * a polyfill) are not instances of this one's class: anything else would
 * fail later, deep in the wait, with a message that names no option.
 */
export const abortSignal: Rule<AbortSignal> = (value) =>
  typeof value === 'object' &&
  value !== null &&
  'aborted' in value &&
  typeof value.aborted === 'boolean' &&
  'addEventListener' in value &&
  typeof value.addEventListener === 'function' &&
  'removeEventListener' in value &&
  typeof value.removeEventListener === 'function'
    ? undefined
    : `must be an AbortSignal, got ${show(value)}`;

const pass = (): undefined => undefined;

/**
 * An option checked where it is read, against what it depends on (the
 * node count for `quorum`, each entry of `clients` as its node is made,
 * `clockMonitor`'s own table): the table only names it.
 */
export function inContext<T>(): Rule<T> {
  return pass;
}

/**
 * An object the application builds in code (`clock`, `logger`,
 * `waitStrategy`): its type is its check, none at run time.
 */
export function unchecked<T>(): Rule<T> {
  return pass;
}

/** Throws `RedlockConfigError` naming `field` when `rule` finds `value` wrong (`undefined` passes). */
export function requireRule<T>(
  rule: Rule<T>,
  field: string,
  value: unknown,
): asserts value is T | undefined {
  const problem = value === undefined ? undefined : rule(value);
  if (problem !== undefined) throw new RedlockConfigError(field, problem);
}
