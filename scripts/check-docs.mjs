// Type-checks every ```ts / ```typescript block of README.md and docs/**/*.md
// against the BUILT package, as an application would import it.
//
//   npm run build && node scripts/check-docs.mjs [--verbose]
//
// Each block becomes its own module (README.md-L120.ts, docs-fencing.md-L40.ts)
// in a scratch folder whose node_modules resolves `nestjs-redlock` and
// `nestjs-redlock/core` to this repository through its package.json
// `exports` (so to dist/), and every other package to the repository's
// node_modules. The repository's tsc checks them together (strict, NodeNext,
// decorators with metadata); each failing block is reported as one line at
// the markdown file:line of its first error (--verbose: every error). A block fenced ```ts no-check is skipped and
// listed. Exits 1 when a block fails, 2 when it cannot check at all.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const verbose = process.argv.includes('--verbose');
const CHECKED = new Set(['ts', 'typescript']);

function fail(message) {
  console.error(`check-docs: ${message}`);
  process.exit(2);
}

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const entryTypes = ['.', './core'].map((entry) => {
  const types = pkg.exports?.[entry]?.import?.types;
  if (!types) fail(`package.json has no exports["${entry}"].import.types`);
  return join(root, types);
});
const missing = entryTypes.filter((file) => !existsSync(file));
if (missing.length)
  fail(
    `dist/ is missing (${missing.map((f) => relative(root, f)).join(', ')}): run npm run build first`,
  );

/** README.md, then docs/**\/*.md in path order. */
function markdownFiles() {
  const files = [join(root, 'README.md')];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk(join(root, 'docs'));
  return files;
}

/**
 * The fenced code blocks of a markdown text: `{ lang, info, line, code }`,
 * `line` being the 1-based line of the opening fence (code starts on the
 * next line). The fence's indentation (a block inside a list) is removed.
 */
function fencedBlocks(text, source) {
  const lines = text.split(/\r?\n/);
  const blocks = [];
  let open;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!open) {
      const m = /^(\s*)(`{3,}|~{3,})\s*([^`]*)$/.exec(line);
      if (!m) continue;
      const info = m[3].trim();
      open = {
        indent: m[1].length,
        fence: m[2],
        lang: (info.split(/\s+/)[0] ?? '').toLowerCase(),
        info,
        line: i + 1,
        body: [],
      };
      continue;
    }
    const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line);
    if (
      close &&
      close[1][0] === open.fence[0] &&
      close[1].length >= open.fence.length
    ) {
      blocks.push({
        lang: open.lang,
        info: open.info,
        line: open.line,
        code: open.body.join('\n') + '\n',
      });
      open = undefined;
      continue;
    }
    const strip = Math.min(open.indent, line.length - line.trimStart().length);
    open.body.push(line.slice(strip));
  }
  if (open) fail(`unclosed code fence at ${source}:${open.line}`);
  return blocks;
}

const blocks = [];
const skipped = [];
for (const file of markdownFiles()) {
  const source = relative(root, file).split(sep).join('/');
  for (const block of fencedBlocks(readFileSync(file, 'utf8'), source)) {
    if (!CHECKED.has(block.lang)) continue;
    const where = `${source}:${block.line}`;
    if (block.info.split(/\s+/).includes('no-check')) {
      skipped.push(where);
      continue;
    }
    blocks.push({
      ...block,
      source,
      where,
      name: `${source.replaceAll('/', '-')}-L${block.line}.ts`,
      errors: [],
    });
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'check-docs-'));

function writeTsconfig(files) {
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          moduleDetection: 'force', // every block is its own module
          strict: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          esModuleInterop: true,
          skipLibCheck: true,
          types: ['node'],
          noEmit: true,
        },
        files: files.map((b) => b.name),
      },
      null,
      2,
    ),
  );
}

let failed = 0;
let broken = false;
try {
  // node_modules: every package of the repository, plus the package itself
  // (a link to the repository root, resolved through its `exports`).
  const modules = join(scratch, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(join(root, 'node_modules')))
    if (name !== pkg.name && name !== '.bin')
      symlinkSync(join(root, 'node_modules', name), join(modules, name));
  symlinkSync(root, join(modules, pkg.name), 'dir');

  writeFileSync(
    join(scratch, 'package.json'),
    JSON.stringify({ name: 'doc-blocks', private: true, type: 'module' }),
  );
  for (const block of blocks)
    writeFileSync(join(scratch, block.name), block.code);

  // tsc reports no semantic error while any file has a syntax error, so the
  // blocks that passed a run with syntax errors are checked again, alone.
  const byName = new Map(blocks.map((b) => [b.name, b]));
  const unplaced = [];
  let pending = blocks;
  while (pending.length) {
    writeTsconfig(pending);
    const tsc = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        join(scratch, 'tsconfig.json'),
        '--pretty',
        'false',
      ],
      { cwd: scratch, encoding: 'utf8' },
    );
    if (tsc.error) throw new Error(`could not run tsc: ${tsc.error.message}`);
    let last;
    let syntax = false;
    for (const line of `${tsc.stdout}${tsc.stderr}`.split(/\r?\n/)) {
      if (!line.trim()) continue;
      const m = /^(.*?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(line);
      const block = m && byName.get(m[1].split(/[\\/]/).pop());
      if (block) {
        last = {
          line: block.line + Number(m[2]),
          column: Number(m[3]),
          code: m[4],
          message: m[5],
        };
        block.errors.push(last);
        if (/^TS1\d{3}$/.test(last.code)) syntax = true;
      } else if (/^\s/.test(line) && last) {
        last.message += ` ${line.trim()}`;
      } else {
        last = undefined;
        unplaced.push(line);
      }
    }
    if (tsc.status !== 0 && !pending.some((b) => b.errors.length))
      unplaced.push(`tsc exited with ${tsc.status}`);
    if (!syntax) break;
    pending = pending.filter((b) => !b.errors.length);
  }
  for (const block of blocks) {
    if (!block.errors.length) continue;
    failed++;
    const shown = verbose ? block.errors : block.errors.slice(0, 1);
    for (const e of shown) {
      const more =
        !verbose && block.errors.length > 1
          ? ` (+${block.errors.length - 1} more in this block)`
          : '';
      console.log(
        `${block.source}:${e.line}:${e.column}: ${e.code} ${e.message}${more} [block at ${block.where}]`,
      );
    }
  }
  // Errors tsc could not place in a block (a broken setup): fail on them too.
  if (unplaced.length) {
    console.log(unplaced.join('\n'));
    broken = true;
  }
} catch (error) {
  console.error(`check-docs: ${error.message}`);
  broken = true;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (skipped.length)
  console.log(
    `doc blocks skipped (ts no-check): ${skipped.length} (${skipped.join(', ')})`,
  );
console.log(`doc blocks: ${blocks.length} checked, ${failed} failed`);
process.exit(failed || broken ? 1 : 0);
