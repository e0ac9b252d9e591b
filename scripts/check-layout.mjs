// Part of `npm run lint`: the layout rules of lib/ that a linter does not
// know. Every source file stays under MAX_LINES (one purpose per file), and
// lib/core (the `nestjs-redlock/core` entry) imports only Node, ioredis, its
// own files and lib/errors, so that it loads without @nestjs/* or rxjs.
// Folders of lib/core are layers: no two of them import each other, directly
// or through a third (each file at the top of lib/core counts as a folder of
// its own); type imports count too. Import cycles between files are checked
// by dpdm, beside this in the lint script.
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
problems.push(...folderCycles());
for (const problem of problems) console.error(problem);
console.log(`layout: ${problems.length ? `${problems.length} problem(s)` : 'ok'}`);
process.exit(problems.length ? 1 : 0);

/** The folder (or top-level file) of lib/core a file belongs to. */
function unitOf(file) {
  const rel = relative(core, file);
  return rel.includes('/') ? rel.split('/')[0] + '/' : rel.replace(/\.(d\.)?ts$/, '');
}

/** Cycles between lib/core's folders: one problem per cycle, with an import that makes each edge. */
function folderCycles() {
  const edges = new Map();
  for (const file of sources(core)) {
    const text = readFileSync(file, 'utf8');
    for (const [, spec] of text.matchAll(/(?:from|import)\s+'(\.[^']+)'/g)) {
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      if (!target.startsWith(core + '/')) continue;
      const [a, b] = [unitOf(file), unitOf(target)];
      if (a === b) continue;
      if (!edges.has(a)) edges.set(a, new Map());
      if (!edges.get(a).has(b)) edges.get(a).set(b, `${relative(root, file)} imports '${spec}'`);
    }
  }
  // Tarjan's strongly connected components: each of more than one unit is a cycle.
  const index = new Map(), low = new Map(), stack = [], onStack = new Set(), found = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next); low.set(v, next++); stack.push(v); onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do { w = stack.pop(); onStack.delete(w); component.push(w); } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found.map((component) => {
    const inside = new Set(component);
    const why = component.flatMap((a) =>
      [...(edges.get(a) ?? [])].filter(([b]) => inside.has(b)).map(([b, how]) => `    ${a} -> ${b}: ${how}`),
    );
    return `lib/core folders import each other: ${component.join(', ')} (a lower layer must not import a higher one)\n${why.join('\n')}`;
  });
}
