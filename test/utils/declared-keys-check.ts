/**
 * The declared-keys test mode: with REDLOCK_DECLARED_KEYS_CHECK=1 (`npm run
 * test:declared`), jest.config.mjs runs this file before each test file,
 * and every Lua script the library sends fails on any key it reaches
 * without declaring it in KEYS (the prologue of declared-keys-lua.ts). The
 * default suite then proves that every script declares every key it
 * touches, on every node kind: a single server, a Cluster, a FencedStore.
 *
 * How: every script the library sends is a `LuaScript` object made by
 * `defineScript` (lib/core/scripts/lua-script.ts), and `runScript` and
 * `runScriptPipeline` read its `source` and `sha` when they send it. So
 * this rewrites each one in place, its Cluster variant too: the prologue
 * first, and the SHA of that new source. The library reads no environment
 * and has no hook for this: the objects are the library's own, reached
 * through the same modules the tests use (jest's moduleNameMapper maps
 * `nestjs-redlock` and the `.js` imports to the same lib/ files, and a
 * setup file runs in the test file's own module registry), so the patched
 * objects are the ones that get sent. Patching the objects rather than a
 * send function: ESM exports cannot be reassigned, and the objects are
 * what every send path (by SHA, the NOSCRIPT fallback, pipelines, SCRIPT
 * LOAD) reads.
 *
 * No script escapes: the files of lib/ that call `defineScript` are found
 * by their text, each is imported, and every script it defines must be
 * among its exports (a script defined here but not found fails every test
 * file at once).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withDeclaredKeysCheck } from './declared-keys-lua.js';

interface Script {
  name: string;
  source: string;
  sha: string;
  forCluster?: Script;
}

const lib = join(dirname(fileURLToPath(import.meta.url)), '../../lib');
const patched = new WeakSet<Script>();

function isScript(value: unknown): value is Script {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Script).name === 'string' &&
    typeof (value as Script).source === 'string' &&
    typeof (value as Script).sha === 'string'
  );
}

function patch(script: Script, name: string): void {
  if (patched.has(script)) return;
  patched.add(script);
  script.source = withDeclaredKeysCheck(name, script.source);
  script.sha = createHash('sha1').update(script.source).digest('hex');
}

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
      yield path;
  }
}

/**
 * Every script of the library, its Cluster variant after it when it has
 * one: the exports of each file of lib/ that calls `defineScript`, as this
 * test file's modules hold them.
 */
export async function libraryScripts(): Promise<
  { script: Script; name: string }[]
> {
  const found: { script: Script; name: string }[] = [];
  for (const file of sources(lib)) {
    const text = readFileSync(file, 'utf8');
    // The file that defines it makes the scripts' variants: they are
    // reached through the scripts that hold them.
    if (/\bfunction defineScript\(/.test(text)) continue;
    const defined = [...text.matchAll(/\bdefineScript\(/g)].length;
    if (defined === 0) continue;
    // The path jest resolves the library's own imports of it to.
    const exports = (await import(file)) as Record<string, unknown>;
    const scripts = Object.values(exports).filter(isScript);
    if (scripts.length !== defined)
      throw new Error(
        `declared-keys check: ${relative(lib, file)} calls defineScript ${defined} time(s) but exports ${scripts.length} script(s): export each, so that the check covers it`,
      );
    for (const script of scripts) {
      found.push({ script, name: script.name });
      if (script.forCluster)
        found.push({
          script: script.forCluster,
          name: `${script.name} (cluster)`,
        });
    }
  }
  return found;
}

if (process.env.REDLOCK_DECLARED_KEYS_CHECK === '1')
  for (const { script, name } of await libraryScripts()) patch(script, name);
