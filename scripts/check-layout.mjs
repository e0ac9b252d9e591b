// Part of `npm run lint`: the layout rules of lib/ that a linter does not
// know. Every source file stays under MAX_LINES (one purpose per file), and
// lib/core (the `nestjs-redlock/core` entry) imports only Node, ioredis, its
// own files and lib/errors, so that it loads without @nestjs/* or rxjs.
// Import cycles are checked by dpdm, beside this in the lint script.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const MAX_LINES = 300;
const root = resolve(import.meta.dirname, '..');
const lib = join(root, 'lib');
const core = join(lib, 'core');
const errors = join(lib, 'errors');

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const problems = [];
for (const file of sources(lib)) {
  const text = readFileSync(file, 'utf8');
  const name = relative(root, file);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_LINES)
    problems.push(`${name}: ${lines} lines (at most ${MAX_LINES}): split it by purpose`);
  if (!file.startsWith(core + '/')) continue;
  for (const [, spec] of text.matchAll(/(?:from|import)\s+'([^']+)'/g)) {
    if (spec.startsWith('node:') || spec === 'ioredis' || spec === 'cluster-key-slot') continue;
    const target = spec.startsWith('.') ? resolve(dirname(file), spec) : undefined;
    if (target && (target.startsWith(core + '/') || target.startsWith(errors + '/')))
      continue;
    problems.push(`${name}: imports '${spec}': lib/core may import only node:*, ioredis, cluster-key-slot, lib/core and lib/errors`);
  }
}
for (const problem of problems) console.error(problem);
console.log(`layout: ${problems.length ? `${problems.length} problem(s)` : 'ok'}`);
process.exit(problems.length ? 1 : 0);
