#!/usr/bin/env node
// The consumer-app check: the package as users install it. Builds the
// library (unless --no-build, then dist/ must exist), packs it with
// `npm pack`, and for each app template under test/consumers/apps copies it
// to a scratch folder, installs its dependencies from the npm registry plus
// the tarball (`npm install <tgz>`), compiles it (`npm run build`: tsc) and
// runs its jest suite (`npm test`) against redis-server processes started
// here, whose URLs it gets in REDIS_URLS. VARIANTS run a template again with
// some dependencies pinned. An app passes when tsc and jest exit 0 within
// their time limits, jest's --detectOpenHandles output names no open handle,
// and jest exits by itself within 15 s of its summary (a client left open
// keeps it alive without a word). One line per app, exit 1 on any failure;
// the whole run is bounded (TOTAL_MS). Apps in PER_FILE (one install for
// many contexts) get one line per test file instead, `<app>/<file stem>`,
// from jest's --json results; a failure of the app itself (install, tsc,
// a hang, an open handle) fails all of its lines.
//
//   node test/consumers/run.mjs [--no-build] [--keep] [--only=<app>,...] [--jobs=2]
//
// Each app has its own node_modules: npm aliases of @nestjs/* cannot hold
// Nest 11 and 12 side by side (peer conflicts). The npm cache
// (--prefer-offline) makes later installs faster than the first.
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
// Installs redis-server where missing (root with apt), as `npm test` does.
import '../../scripts/ensure-redis.mjs';
import { startServers } from '../../scripts/redis-nodes.mjs';

const root = resolve(import.meta.dirname, '../..');
const templates = join(import.meta.dirname, 'apps');
const args = process.argv.slice(2);
const build = !args.includes('--no-build');
const keep = args.includes('--keep');
/** Apps checked at once: the steps are CPU-bound (tsc, jest) but for install. */
const jobs = Number(
  args.find((arg) => arg.startsWith('--jobs='))?.slice('--jobs='.length) ?? 2,
);
const only = args
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
/**
 * Templates run again with dependencies pinned to the lowest versions the
 * package's peer ranges claim (`^11`, `^5.4`, `^0.1.13`, `^7.1`), so the
 * floors are tested, not only the newest release of each major.
 */
const VARIANTS = {
  'cjs-nest11-floor': {
    template: 'cjs-nest11',
    pin: {
      '@nestjs/common': '11.0.0',
      '@nestjs/core': '11.0.0',
      '@nestjs/platform-express': '11.0.0',
      '@nestjs/testing': '11.0.0',
      '@nestjs/config': '4.0.0',
      ioredis: '5.4.0',
      'reflect-metadata': '0.1.13',
      // The first rxjs with finalize at its root, which the package imports.
      rxjs: '7.2.0',
    },
  },
  // @nestjs/core, platform-express and testing 12.0.0 were published with
  // peers on @nestjs/common ^11 (npm refuses them beside common 12): their
  // floor is 12.0.1.
  'esm-nest12-floor': {
    template: 'esm-nest12',
    pin: {
      '@nestjs/common': '12.0.0',
      '@nestjs/core': '12.0.1',
      '@nestjs/platform-express': '12.0.1',
      '@nestjs/testing': '12.0.1',
      '@nestjs/config': '12.0.0',
      ioredis: '6.0.0',
      'reflect-metadata': '0.1.13',
      // The first rxjs whose package.json "exports" give its typings: with
      // NodeNext resolution older ones leave Nest's typings (and this
      // package's) without rxjs types (TS7016).
      rxjs: '7.5.5',
    },
  },
};
/**
 * Apps whose test files are counted one by one: `contexts` holds one small
 * app per Nest context (HTTP on Fastify, RPC, WebSockets, GraphQL,
 * schedule, queues) on one install, and CI counts each context.
 */
const PER_FILE = new Set(['contexts']);
const NODES = 3;
const MINUTE = 60_000;
/** The whole run, then each step of one app. */
const TOTAL_MS = 20 * MINUTE;
const LIMITS = { install: 8 * MINUTE, build: 3 * MINUTE, test: 4 * MINUTE };
/** Apps whose steps need more than LIMITS: contexts runs every context's suite. */
const APP_LIMITS = { contexts: { test: 8 * MINUTE } };
/** A test file of an app, as jest's testRegex of the templates finds them. */
const TEST_FILE = /\.(e2e-)?spec\.ts$/;

const started = Date.now();
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** Process groups of the commands running now, killed on timeout or signal. */
const running = new Set();
/** Redis servers started here, stopped by pid at the end. */
const servers = [];
let scratch;

/**
 * Runs a command in its own process group (so a timeout kills npm and the
 * node processes under it), collecting stdout and stderr together.
 */
function sh(command, commandArgs, { cwd, env = {}, timeoutMs, exitAfter }) {
  const begun = Date.now();
  return new Promise((done) => {
    const child = spawn(command, commandArgs, {
      cwd,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let output = '';
    let hung = false;
    let grace;
    const collect = (chunk) => {
      output += chunk.toString();
      if (output.length > 4_000_000) output = output.slice(-2_000_000);
      // Done by its own account, yet still running: something keeps the
      // event loop alive (jest --detectOpenHandles does not always say).
      if (exitAfter && !grace && exitAfter.pattern.test(output))
        grace = setTimeout(() => {
          hung = true;
          killGroup(child);
        }, exitAfter.ms);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    const finish = (code) => {
      clearTimeout(timer);
      clearTimeout(grace);
      running.delete(child);
      done({ code, output, timedOut, hung, ms: Date.now() - begun });
    };
    child.once('error', (error) => {
      output += String(error);
      finish(-1);
    });
    child.once('close', (code) => finish(code));
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function tail(text, lines = 60) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Why a step failed, or undefined. */
function stepFailure(name, result, limitMs) {
  if (result.hung)
    return `${name} finished its work but did not exit by itself (something keeps the process alive)`;
  if (result.timedOut)
    return `${name} did not finish within ${seconds(limitMs)}`;
  if (result.code !== 0) return `${name} exited with ${result.code}`;
  return undefined;
}

/** What jest's output says against the whole app: a handle left open. */
function openHandles(output) {
  if (/open handle/i.test(output))
    return 'jest --detectOpenHandles reported an open handle';
  if (/did not exit/i.test(output)) return 'jest did not exit by itself';
  return undefined;
}

/** What jest's output says against the app, beyond its exit code. */
function jestFailure(output) {
  const handles = openHandles(output);
  if (handles) return handles;
  const tests = /Tests:\s+(.*)/.exec(output)?.[1] ?? '';
  if (/failed/.test(tests) || !/\d+ passed/.test(tests))
    return `jest reported: ${tests || 'no test summary'}`;
  return undefined;
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function versionsIn(dir) {
  const read = (name) => {
    try {
      const file = join(dir, 'node_modules', name, 'package.json');
      return JSON.parse(readFileSync(file, 'utf8')).version;
    } catch {
      return '?';
    }
  };
  return [
    '@nestjs/core',
    'ioredis',
    'reflect-metadata',
    'rxjs',
    'jest',
    'typescript',
  ]
    .map((name) => `${name.replace('@nestjs/', 'nest ')} ${read(name)}`)
    .join(', ');
}

/** Pins the given dependencies of the app in `dir` to exact versions. */
function pinVersions(dir, pin) {
  const file = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  for (const [name, version] of Object.entries(pin)) {
    const section = ['dependencies', 'devDependencies'].find(
      (key) => manifest[key]?.[name],
    );
    if (!section) throw new Error(`${file} has no dependency ${name} to pin`);
    manifest[section][name] = version;
  }
  writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n');
}

/** `<app>/<stem>` for each test file of the app's template (stem: `fastify` of `fastify.e2e-spec.ts`). */
function testFilesOf(name, template) {
  return readdirSync(join(templates, template, 'test'))
    .filter((file) => TEST_FILE.test(file))
    .sort()
    .map((file) => ({ file, name: `${name}/${file.replace(TEST_FILE, '')}` }));
}

/**
 * One result per test file of a PER_FILE app, from jest's --json output:
 * a file passes when jest ran it and every test in it passed.
 */
function fileResults(files, json, steps, versions) {
  const byFile = new Map(
    (json?.testResults ?? []).map((suite) => [basename(suite.name), suite]),
  );
  return files.map(({ file, name }) => {
    const suite = byFile.get(file);
    if (!suite)
      return {
        name,
        ok: false,
        reason: 'jest reported no result for it',
        output: '',
        steps,
        ms: 0,
      };
    const counts = {};
    for (const { status } of suite.assertionResults)
      counts[status] = (counts[status] ?? 0) + 1;
    const summary = Object.entries(counts)
      .map(([status, n]) => `${n} ${status}`)
      .join(', ');
    const ms = suite.endTime - suite.startTime;
    return suite.status === 'passed'
      ? { name, ok: true, versions, summary, steps, ms }
      : {
          name,
          ok: false,
          reason: `jest: ${summary || 'the file failed to run'}`,
          output: suite.message ?? '',
          steps,
          ms,
        };
  });
}

/** The app's result, or one per test file for a PER_FILE app. */
async function checkApp(name, tarball) {
  const { template = name } = VARIANTS[name] ?? {};
  const result = await checkAppOnce(name, tarball);
  if (!PER_FILE.has(template)) return [result];
  const files = testFilesOf(name, template);
  // The app itself failed (install, tsc, a hang, an open handle): so did
  // every file of it.
  if (!result.ok || !result.json)
    return files.map((file, i) => ({
      ...result,
      ok: false,
      name: file.name,
      reason: `${name}: ${result.reason ?? 'jest wrote no --json results'}`,
      // The app's output once, under its first file.
      output:
        i === 0 ? (result.output ?? '') : `(output under ${files[0].name})`,
    }));
  return fileResults(files, result.json, result.steps, result.versions);
}

async function checkAppOnce(name, tarball) {
  const begun = Date.now();
  const dir = join(scratch, name);
  const { template = name, pin } = VARIANTS[name] ?? {};
  const limits = { ...LIMITS, ...APP_LIMITS[template] };
  const perFile = PER_FILE.has(template);
  cpSync(join(templates, template), dir, {
    recursive: true,
    filter: (source) => !/[/\\](node_modules|dist)$/.test(source),
  });
  if (pin) pinVersions(dir, pin);
  const steps = [];
  const fail = (reason, output = '') => ({
    name,
    ok: false,
    reason,
    output,
    steps,
    ms: Date.now() - begun,
  });

  const install = await sh(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball],
    { cwd: dir, timeoutMs: limits.install },
  );
  steps.push(`install ${seconds(install.ms)}`);
  const installFailed = stepFailure('npm install', install, limits.install);
  if (installFailed) return fail(installFailed, install.output);
  const versions = versionsIn(dir);

  const compile = await sh('npm', ['run', 'build'], {
    cwd: dir,
    timeoutMs: limits.build,
  });
  steps.push(`tsc ${seconds(compile.ms)}`);
  const compileFailed = stepFailure('tsc', compile, limits.build);
  if (compileFailed) return fail(compileFailed, compile.output);

  const nodes = await startServers(NODES);
  servers.push(...nodes);
  const jsonFile = join(dir, 'jest-results.json');
  try {
    const test = await sh(
      'npm',
      perFile ? ['test', '--', '--json', `--outputFile=${jsonFile}`] : ['test'],
      {
        cwd: dir,
        env: { REDIS_URLS: nodes.map((node) => node.url).join(',') },
        timeoutMs: limits.test,
        exitAfter: { pattern: /^Ran all test suites/m, ms: 15_000 },
      },
    );
    steps.push(`jest ${seconds(test.ms)}`);
    if (perFile) {
      const json = readJson(jsonFile);
      // A failed file fails its own line (fileResults); the exit code
      // counts against the whole app only when no file failed.
      const filesFailed = json?.testResults.some((s) => s.status === 'failed');
      const appFailed =
        stepFailure('jest', { ...test, code: 0 }, limits.test) ??
        openHandles(test.output) ??
        (test.code !== 0 && !filesFailed
          ? `jest exited with ${test.code}`
          : undefined);
      if (appFailed) return fail(appFailed, test.output);
      return { name, ok: true, versions, json, steps, ms: Date.now() - begun };
    }
    const testFailed =
      stepFailure('jest', test, limits.test) ?? jestFailure(test.output);
    if (testFailed) return fail(testFailed, test.output);
    const summary = /Tests:\s+(.*)/.exec(test.output)?.[1].trim();
    return { name, ok: true, versions, summary, steps, ms: Date.now() - begun };
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
  }
}

async function cleanup() {
  for (const child of running) killGroup(child);
  await Promise.allSettled(servers.map((server) => server.stop()));
  if (scratch && !keep) rmSync(scratch, { recursive: true, force: true });
}

async function main() {
  const apps = readdirSync(templates, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .concat(Object.keys(VARIANTS))
    .filter((name) => !only || only.includes(name));
  if (apps.length === 0) throw new Error(`no app matches --only=${only}`);

  if (build) {
    const result = await sh('npm', ['run', 'build'], {
      cwd: root,
      timeoutMs: 5 * MINUTE,
    });
    const failed = stepFailure('npm run build', result, 5 * MINUTE);
    if (failed) throw new Error(`${failed}\n${tail(result.output)}`);
  } else if (!existsSync(join(root, 'dist/cjs/index.js')))
    throw new Error('dist/ is missing: run `npm run build` or drop --no-build');

  scratch = mkdtempSync(join(tmpdir(), 'nestjs-redlock-consumers-'));
  const pack = await sh(
    'npm',
    ['pack', '--json', '--pack-destination', scratch],
    { cwd: root, timeoutMs: 2 * MINUTE },
  );
  const packFailed = stepFailure('npm pack', pack, 2 * MINUTE);
  if (packFailed) throw new Error(`${packFailed}\n${tail(pack.output)}`);
  const [{ filename }] = JSON.parse(
    pack.output.slice(pack.output.indexOf('[')),
  );
  const tarball = join(scratch, filename);
  console.log(`consumers: packed ${filename}; apps in ${scratch}`);

  const results = [];
  const queue = [...apps];
  await Promise.all(
    Array.from({ length: Math.max(1, jobs) }, async () => {
      for (let name; (name = queue.shift());)
        results.push({ name, lines: await checkApp(name, tarball) });
    }),
  );
  results.sort((x, y) => apps.indexOf(x.name) - apps.indexOf(y.name));
  const lines = results.flatMap((result) => result.lines);
  for (const result of lines) {
    const line = `${result.ok ? 'PASS' : 'FAIL'} ${result.name} ${seconds(result.ms)} (${result.steps.join(', ')})`;
    if (result.ok)
      console.log(`${line} [${result.versions}] ${result.summary}`);
    else console.log(`${line}: ${result.reason}\n${tail(result.output)}\n`);
  }
  const failed = lines.filter((result) => !result.ok).length;
  console.log(
    `consumers: ${lines.length - failed} passed, ${failed} failed in ${seconds(Date.now() - started)}`,
  );
  return failed === 0;
}

const deadline = setTimeout(() => {
  console.log(`FAIL consumers: the whole check took over ${seconds(TOTAL_MS)}`);
  void cleanup().then(() => process.exit(1));
}, TOTAL_MS);
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => void cleanup().then(() => process.exit(130)));

main()
  .then(async (ok) => {
    clearTimeout(deadline);
    await cleanup();
    process.exit(ok ? 0 : 1);
  })
  .catch(async (error) => {
    clearTimeout(deadline);
    console.log(
      `FAIL consumers: ${error instanceof Error ? error.message : error}`,
    );
    await cleanup();
    process.exit(1);
  });
