import { show } from '../core/util/validate.js';
import { LockKeyError } from '../errors/lock-key.error.js';

/** `<dto.items.*.sku>`: a root (parameter name or position) and a path. */
export interface Placeholder {
  /** As written, with the angle brackets. */
  readonly text: string;
  /** A parameter name, or a position for `<0>`. */
  readonly root: string | number;
  /** Property names, array indexes as strings, or `*` (one resource per element). */
  readonly path: readonly string[];
}

/** A parsed template: literal text and placeholders, in order. */
export interface KeyTemplate {
  readonly source: string;
  readonly parts: readonly (string | Placeholder)[];
  readonly placeholders: readonly Placeholder[];
}

/** Looks a placeholder's root up: a parameter, a part of a request… */
export type RootLookup = (
  root: string | number,
) => { found: true; value: unknown } | { found: false };

const ROOT = /^(?:\d+|[A-Za-z_$][\w$]*)$/;
const SEGMENT = /^(?:\*|[^\s.<>*]+)$/;

/**
 * Parses `'order:<id>'`, `'sku:<dto.items.*.sku>'`, `'user:<0.id>'`. Throws
 * an `Error` whose message says what is wrong with the template (the caller
 * adds where it was written).
 */
export function parseTemplate(source: string): KeyTemplate {
  if (typeof source !== 'string' || source.length === 0)
    throw new Error(
      `a template must be a non-empty string, got ${show(source)}`,
    );
  const parts: (string | Placeholder)[] = [];
  const placeholders: Placeholder[] = [];
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('<', i);
    const strayClose = source.indexOf('>', i);
    if (strayClose >= 0 && (open < 0 || strayClose < open))
      throw new Error(`"${source}" has a ">" without a "<" before it`);
    if (open < 0) {
      parts.push(source.slice(i));
      break;
    }
    if (open > i) parts.push(source.slice(i, open));
    const close = source.indexOf('>', open);
    if (close < 0) throw new Error(`"${source}" has a "<" that is not closed`);
    const text = source.slice(open, close + 1);
    const inner = text.slice(1, -1).trim();
    const segments = inner.split('.');
    if (inner === '' || inner.includes('<'))
      throw new Error(`"${source}" has an empty or nested placeholder ${text}`);
    if (!ROOT.test(segments[0]))
      throw new Error(
        `${text} in "${source}" must start with a parameter name or a position (<id>, <0>)`,
      );
    const bad = segments.slice(1).find((s) => !SEGMENT.test(s));
    if (bad !== undefined)
      throw new Error(`${text} in "${source}" has an invalid part "${bad}"`);
    const root = /^\d+$/.test(segments[0]) ? Number(segments[0]) : segments[0];
    const placeholder = { text, root, path: segments.slice(1) };
    parts.push(placeholder);
    placeholders.push(placeholder);
    i = close + 1;
  }
  return { source, parts, placeholders };
}

/**
 * The resources a template names for one call. A `*` yields one resource per
 * element, and two expanding placeholders yield every combination. Throws
 * `LockKeyError` for a value that cannot name a resource.
 */
export function resolveTemplate(
  template: KeyTemplate,
  lookup: RootLookup,
  method: string,
): string[] {
  let results = [''];
  for (const part of template.parts) {
    if (typeof part === 'string') {
      results = results.map((r) => r + part);
      continue;
    }
    const values = resolvePlaceholder(part, lookup, method);
    results = results.flatMap((r) => values.map((v) => r + v));
  }
  return results;
}

function resolvePlaceholder(
  placeholder: Placeholder,
  lookup: RootLookup,
  method: string,
): string[] {
  const fail = (problem: string) =>
    new LockKeyError(method, placeholder.text, problem);
  const root = lookup(placeholder.root);
  if (!root.found) throw fail('names no argument of this call');
  let values: unknown[] = [root.value];
  let at = String(placeholder.root);
  for (const segment of placeholder.path) {
    const where = at;
    if (segment === '*') {
      values = values.flatMap((v) => {
        if (!Array.isArray(v))
          throw fail(`needs a list at ${where}, got ${show(v)}`);
        if (v.length === 0) throw fail(`got an empty list at ${where}`);
        return v as unknown[];
      });
    } else {
      values = values.map((v) => {
        if (v === null || (typeof v !== 'object' && typeof v !== 'function'))
          throw fail(`cannot read "${segment}" of ${where}: it is ${show(v)}`);
        return (v as Record<string, unknown>)[segment];
      });
    }
    at = `${at}.${segment}`;
  }
  return values.map((v) => resourcePart(v, fail));
}

/** A value that can be part of a resource name, as a string. */
function resourcePart(value: unknown, fail: (p: string) => LockKeyError) {
  switch (typeof value) {
    case 'string':
      if (value.length === 0) throw fail('got an empty string');
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw fail(`got ${value}`);
      return String(value);
    case 'bigint':
    case 'boolean':
      return String(value);
    default:
      if (Array.isArray(value) && value.length === 0)
        throw fail('got an empty list');
      throw fail(
        `got ${show(value)}${Array.isArray(value) ? ' (use .* to lock one resource per element)' : ''}`,
      );
  }
}
