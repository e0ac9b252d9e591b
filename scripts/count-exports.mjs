// Counts the names each entry point of the BUILT package exports: runtime
// values (classes, functions, constants) and types (interfaces, type
// aliases, and names exported with `export type`), read from the entry's
// .d.ts with the TypeScript compiler, `export *` and re-exports resolved.
//
//   npm run build && node scripts/count-exports.mjs [--list] [--json] [--dist dist/cjs] [--runtime]
//
// --list prints every name; --json prints { entry: { values, types } };
// --dist reads another build (default dist/esm); --runtime also imports each
// entry's JavaScript and fails (exit 1) when its runtime names differ from
// the values the .d.ts declares (an entry whose optional peer is missing is
// reported and skipped). Exits 2 when dist/ is missing.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const distIndex = args.indexOf('--dist');
const dist = resolve(root, distIndex >= 0 ? args[distIndex + 1] : 'dist/esm');

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
/** `nestjs-redlock`, `nestjs-redlock/core`, ...: each with its .d.ts and .js in `dist`. */
const entries = Object.keys(pkg.exports)
  .filter((key) => key !== './package.json')
  .map((key) => {
    const sub = key === '.' ? '' : key.slice(2) + '/';
    return {
      name: key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      types: join(dist, `${sub}index.d.ts`),
      js: join(dist, `${sub}index.js`),
    };
  });
const missing = entries.filter((e) => !existsSync(e.types));
if (missing.length) {
  console.error(
    `count-exports: ${missing.map((e) => e.types).join(', ')} missing: run npm run build first`,
  );
  process.exit(2);
}

const program = ts.createProgram(
  entries.map((e) => e.types),
  {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  },
);
const checker = program.getTypeChecker();

/**
 * Whether an exported name is type-only: declared with `export type`,
 * `import type` or `export type *` somewhere along its chain of aliases.
 */
function typeOnly(symbol) {
  if (checker.getTypeOnlyAliasDeclaration?.(symbol)) return true;
  for (let s = symbol, seen = 0; s.flags & ts.SymbolFlags.Alias && seen < 50; seen++) {
    for (const d of s.declarations ?? [])
      if (ts.isTypeOnlyImportOrExportDeclaration?.(d)) return true;
    const next = checker.getImmediateAliasedSymbol(s);
    if (!next || next === s) break;
    s = next;
  }
  return false;
}

/** The names of one entry: `{ values, types }`, each sorted. */
function exportsOf(file) {
  const source = program.getSourceFile(file);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`${file} is not a module`);
  const values = [];
  const types = [];
  for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
    const target =
      symbol.flags & ts.SymbolFlags.Alias
        ? checker.getAliasedSymbol(symbol)
        : symbol;
    const isValue = target.flags & ts.SymbolFlags.Value && !typeOnly(symbol);
    (isValue ? values : types).push(symbol.name);
  }
  return { values: values.sort(), types: types.sort() };
}

const report = {};
let differs = false;
for (const entry of entries) {
  const names = exportsOf(entry.types);
  report[entry.name] = names;
  if (!flag('--runtime')) continue;
  try {
    const loaded = await import(pathToFileURL(entry.js).href);
    const runtime = Object.keys(loaded)
      .filter((k) => k !== 'default' && k !== '__esModule')
      .sort();
    const declared = names.values;
    const onlyRuntime = runtime.filter((n) => !declared.includes(n));
    const onlyDeclared = declared.filter((n) => !runtime.includes(n));
    if (onlyRuntime.length || onlyDeclared.length) {
      differs = true;
      console.error(
        `${entry.name}: runtime names differ from the declared values: only at runtime [${onlyRuntime}], only declared [${onlyDeclared}]`,
      );
    }
  } catch (error) {
    console.error(`${entry.name}: not loaded (${error.code ?? error.message})`);
  }
}

if (flag('--json')) {
  console.log(JSON.stringify(report, null, 2));
} else {
  const width = Math.max(...entries.map((e) => e.name.length));
  console.log(`${'entry'.padEnd(width)}  values  types  total  (${dist})`);
  for (const [name, { values, types }] of Object.entries(report)) {
    console.log(
      `${name.padEnd(width)}  ${String(values.length).padStart(6)}  ${String(types.length).padStart(5)}  ${String(values.length + types.length).padStart(5)}`,
    );
    if (flag('--list')) {
      console.log(`  values: ${values.join(', ')}`);
      console.log(`  types:  ${types.join(', ')}`);
    }
  }
}
if (differs) process.exit(1);
