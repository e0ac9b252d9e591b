import { show } from '../core/util/validate.js';
import { LockKeyError } from '../errors/lock-key.error.js';
import type { LockedKey } from '../interfaces/locked-options.interface.js';
import {
  parseTemplate,
  resolveTemplate,
  type KeyTemplate,
  type RootLookup,
} from './key-template.js';
import type { ParameterList } from './parameter-names.js';

/** A key, checked once when the decorator is applied. */
export type CompiledKey =
  | { readonly kind: 'templates'; readonly templates: readonly KeyTemplate[] }
  | {
      readonly kind: 'function';
      readonly fn: (...args: any[]) => unknown;
    };

/** Parses a key given to `@Locked` / `@LockKey`; throws an `Error` saying what is wrong. */
export function compileKey(key: LockedKey): CompiledKey {
  if (typeof key === 'function') return { kind: 'function', fn: key };
  if (typeof key === 'string')
    return { kind: 'templates', templates: [parseTemplate(key)] };
  if (Array.isArray(key)) {
    if (key.length === 0) throw new Error('the list of templates is empty');
    return {
      kind: 'templates',
      templates: (key as unknown[]).map((t) => parseTemplate(t as string)),
    };
  }
  throw new Error(
    `a key must be a template, a list of templates or a function, got ${show(key)}`,
  );
}

/**
 * Problems with the placeholders of a key for a method's parameters: a name
 * that is no parameter, a position past the last one. Empty when all is well.
 */
export function checkPlaceholders(
  key: CompiledKey,
  params: ParameterList | undefined,
  signature: string,
): string[] {
  if (key.kind === 'function') return [];
  const problems: string[] = [];
  for (const { text, root } of key.templates.flatMap((t) => t.placeholders)) {
    if (typeof root === 'number') {
      if (params && params.rest === undefined && root >= params.names.length)
        problems.push(
          `placeholder ${text} names argument ${root}, but ${signature} takes ${params.names.length}`,
        );
    } else if (!params) {
      problems.push(
        `placeholder ${text}: the parameter names of ${signature} cannot be read (a Proxy, bound or native function; or another decorator below @Locked replaced the method). Use a positional placeholder such as <0>.`,
      );
    } else if (!params.names.includes(root)) {
      problems.push(
        `placeholder ${text} names no parameter of ${signature}${destructured(params)}. Use one of the parameter names, or a positional placeholder such as <0>.`,
      );
    }
  }
  return problems;
}

function destructured(params: ParameterList): string {
  return params.names.includes(undefined)
    ? ' (a destructured parameter has no name: reach it by position)'
    : '';
}

/** `placeOrder(dto, user)` for messages. */
export function describeSignature(
  name: string,
  params: ParameterList | undefined,
): string {
  if (!params) return `${name}(?)`;
  const list = params.names.map(
    (n, i) => `${i === params.rest ? '...' : ''}${n ?? `<${i}: destructured>`}`,
  );
  return `${name}(${list.join(', ')})`;
}

/** Looks placeholders up in a call's arguments, by name or position. */
export function argumentLookup(
  params: ParameterList | undefined,
  args: readonly unknown[],
): RootLookup {
  return (root) => {
    if (typeof root === 'number')
      return root < args.length || !params || root < params.names.length
        ? { found: true, value: args[root] }
        : { found: false };
    const index = params?.names.indexOf(root) ?? -1;
    if (index < 0) return { found: false };
    if (index === params?.rest)
      return { found: true, value: args.slice(index) };
    return { found: true, value: args[index] };
  };
}

/**
 * The resources of one call: every template resolved (or the key function
 * called), then sorted and de-duplicated. Throws `LockKeyError` before
 * anything is locked.
 */
export function resolveKey(
  key: CompiledKey,
  lookup: RootLookup,
  method: string,
  fnThis: unknown,
  fnArgs: readonly unknown[],
): string[] {
  let resources: string[];
  if (key.kind === 'templates') {
    resources = key.templates.flatMap((t) =>
      resolveTemplate(t, lookup, method),
    );
  } else {
    const fail = (problem: string) =>
      new LockKeyError(method, 'the key function', problem);
    const value = key.fn.apply(fnThis, fnArgs as unknown[]);
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list)) throw fail(`returned ${show(value)}`);
    if (list.length === 0) throw fail('returned an empty list');
    list.forEach((r: unknown, i) => {
      if (typeof r !== 'string' || r.length === 0)
        throw fail(
          `returned ${show(r)}${Array.isArray(value) ? ` at index ${i}` : ''}, not a non-empty string`,
        );
    });
    resources = list as string[];
  }
  return [...new Set(resources)].sort();
}
