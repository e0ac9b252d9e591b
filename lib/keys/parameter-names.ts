/**
 * The parameters of a function as written in its source: a name, or
 * `undefined` for a destructured one (`{ sku }`, `[a, b]`), which only a
 * positional placeholder can reach. `rest` is the index of a `...rest`
 * parameter, if any.
 */
export interface ParameterList {
  readonly names: readonly (string | undefined)[];
  readonly rest?: number;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Reads parameter names from `fn.toString()`. TypeScript (tsc, ts-jest, swc)
 * keeps them; a minifier renames them, which is why positional placeholders
 * exist. Returns `undefined` when the source is not readable (native code,
 * a bound function or a Proxy, whose `toString` shows no parameters).
 */
export function parameterNames(
  fn: (...args: any[]) => unknown,
): ParameterList | undefined {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return undefined;
  }
  if (/\{\s*\[native code\]\s*\}\s*$/.test(source)) return undefined;
  const list = parameterSource(source);
  if (list === undefined) return undefined;
  const parts = splitTopLevel(list);
  const names: (string | undefined)[] = [];
  let rest: number | undefined;
  parts.forEach((raw, i) => {
    let part = stripComments(raw).trim();
    if (part.startsWith('...')) {
      rest = i;
      part = part.slice(3).trim();
    }
    const name = part.split('=')[0].trim();
    names.push(IDENTIFIER.test(name) ? name : undefined);
  });
  return { names, rest };
}

/** The text between the parentheses of the parameter list, or `undefined`. */
function parameterSource(source: string): string | undefined {
  let i = 0;
  // A single-parameter arrow function without parentheses: `x => ...`.
  const arrow = /^(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
  if (arrow) return arrow[1];
  // Skip the head (`async`, `function`, `*`, `get`, the name); a computed
  // `[key]` or quoted name may itself contain parentheses.
  while (i < source.length && source[i] !== '(') {
    const c = source[i];
    if (c === '[') i = skipBalanced(source, i, '[', ']');
    else if (c === '"' || c === "'" || c === '`') i = skipString(source, i);
    else if (c === '/' && (source[i + 1] === '/' || source[i + 1] === '*'))
      i = skipComment(source, i);
    else if (c === '{' || c === '=') return undefined;
    else i++;
  }
  if (i >= source.length) return undefined;
  const end = skipBalanced(source, i, '(', ')');
  if (end > source.length) return undefined;
  return source.slice(i + 1, end - 1);
}

/** Splits on commas outside brackets, strings and comments. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') i = skipString(text, i);
    else if (c === '/' && (text[i + 1] === '/' || text[i + 1] === '*'))
      i = skipComment(text, i);
    else {
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') depth--;
      else if (c === ',' && depth === 0) {
        parts.push(text.slice(start, i));
        start = i + 1;
      }
      i++;
    }
  }
  const last = text.slice(start);
  if (stripComments(last).trim() !== '' || parts.length > 0) parts.push(last);
  return parts;
}

/** Index just past the bracket that closes the one at `i`. */
function skipBalanced(
  text: string,
  i: number,
  open: string,
  close: string,
): number {
  let depth = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(text, i);
      continue;
    }
    if (c === '/' && (text[i + 1] === '/' || text[i + 1] === '*')) {
      i = skipComment(text, i);
      continue;
    }
    if (c === open) depth++;
    else if (c === close && --depth === 0) return i + 1;
    i++;
  }
  return text.length + 1;
}

function skipString(text: string, i: number): number {
  const quote = text[i++];
  while (i < text.length && text[i] !== quote) {
    if (text[i] === '\\') i++;
    else if (quote === '`' && text[i] === '$' && text[i + 1] === '{') {
      i = skipBalanced(text, i + 1, '{', '}');
      continue;
    }
    i++;
  }
  return i + 1;
}

function skipComment(text: string, i: number): number {
  if (text[i + 1] === '/') {
    const end = text.indexOf('\n', i);
    return end < 0 ? text.length : end + 1;
  }
  const end = text.indexOf('*/', i + 2);
  return end < 0 ? text.length : end + 2;
}

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
}
