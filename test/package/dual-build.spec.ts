import { execFile } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as source from 'nestjs-redlock';
import * as coreSource from '../../lib/core/index.js';
import * as testingSource from '../../lib/testing/index.js';
import { quorumUrls, singleUrl, uniquePrefix } from '../utils/nodes.js';
import { freePort } from '../../scripts/redis-nodes.mjs';

/**
 * The package as a consumer installs it: built (both builds, as `npm run
 * build` does, into a temporary directory), placed in a consumer's
 * node_modules next to its peer dependencies, and loaded by plain Node
 * scripts (copied from test/package/fixtures) through `require` and
 * `import`.
 */
const run = promisify(execFile);
const root = process.cwd();
const fixtures = join(root, 'test/package/fixtures');
const consumer = mkdtempSync(join(tmpdir(), 'nestjs-redlock-consumer-'));
const installed = join(consumer, 'node_modules/nestjs-redlock');
/** A consumer of `nestjs-redlock/core` alone: ioredis is its only package. */
const coreConsumer = mkdtempSync(join(tmpdir(), 'nestjs-redlock-core-'));

async function node(
  script: string,
  env: Record<string, string> = {},
  dir = consumer,
) {
  const { stdout } = await run(process.execPath, [join(dir, script)], {
    cwd: dir,
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Record<string, any>;
}

beforeAll(async () => {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  await Promise.all([
    run(process.execPath, [
      tsc,
      '-p',
      'tsconfig.build.json',
      '--outDir',
      join(installed, 'dist/esm'),
    ]),
    run(process.execPath, [
      tsc,
      '-p',
      'tsconfig.build.cjs.json',
      '--outDir',
      join(installed, 'dist/cjs'),
    ]),
  ]);
  await run(process.execPath, [
    'scripts/write-cjs-package.mjs',
    join(installed, 'dist/cjs'),
  ]);
  copyFileSync('package.json', join(installed, 'package.json'));
  // Scripts resolve packages from where they lie (and from inside this
  // repository, `nestjs-redlock` would name the repository itself).
  for (const script of [
    'exports.cjs',
    'exports.mjs',
    'two-copies.cjs',
    'exits.mjs',
  ])
    copyFileSync(join(fixtures, script), join(consumer, script));
  // The peers the package needs and its dependency, as npm would have
  // installed them.
  mkdirSync(join(consumer, 'node_modules/@nestjs'));
  for (const peer of [
    '@nestjs/common',
    '@nestjs/core',
    'ioredis',
    'reflect-metadata',
    'rxjs',
    'cluster-key-slot',
  ])
    symlinkSync(
      join(root, 'node_modules', peer),
      join(consumer, 'node_modules', peer),
    );
  // A copy, not a link: a link would resolve the package's own imports from
  // the first consumer's node_modules, where the Nest peers are.
  cpSync(installed, join(coreConsumer, 'node_modules/nestjs-redlock'), {
    recursive: true,
  });
  for (const dependency of ['ioredis', 'cluster-key-slot'])
    symlinkSync(
      join(root, 'node_modules', dependency),
      join(coreConsumer, 'node_modules', dependency),
    );
  copyFileSync(
    join(fixtures, 'core-only.mjs'),
    join(coreConsumer, 'core-only.mjs'),
  );
}, 120_000);

afterAll(() => {
  rmSync(consumer, { recursive: true, force: true });
  rmSync(coreConsumer, { recursive: true, force: true });
});

describe('the published package', () => {
  it('require() gets the CommonJS build and import the ESM build, with the same exports as the source (nestjs-redlock/testing too; nestjs-redlock/terminus and /otel only with their optional peers)', async () => {
    const [required, imported] = await Promise.all([
      node('exports.cjs'),
      node('exports.mjs'),
    ]);
    expect(required.resolved).toBe(join(installed, 'dist/cjs/index.js'));
    expect(imported.resolved).toBe(
      'file://' + resolve(installed, 'dist/esm/index.js'),
    );
    const names = Object.keys(source).sort();
    expect(names).toContain('RedlockModule');
    expect(required.names).toEqual(names);
    expect(imported.names).toEqual(names);
    // nestjs-redlock/testing from both builds too.
    const testing = Object.keys(testingSource).sort();
    expect(testing).toEqual([
      'InMemoryRedlock',
      'RedlockTestingModule',
      'TestClock',
    ]);
    expect(required.testing).toEqual(testing);
    expect(imported.testing).toEqual(testing);
    // The main entry loaded without @nestjs/terminus or @opentelemetry/api;
    // only their own subpaths need them.
    expect(required.terminus).toBe('MODULE_NOT_FOUND');
    expect(imported.terminus).toBe('ERR_MODULE_NOT_FOUND');
    expect(required.otel).toBe('MODULE_NOT_FOUND');
    expect(imported.otel).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('nestjs-redlock/core loads and locks where no @nestjs/* nor rxjs can be resolved, from either build', async () => {
    const report = await node(
      'core-only.mjs',
      { REDIS_URL: singleUrl(), KEY_PREFIX: uniquePrefix('core-only') },
      coreConsumer,
    );
    // The consumer really lacks the Nest peers: the main entry fails there.
    expect(report.peersFound).toEqual([]);
    expect(report.mainEntry).toBe('ERR_MODULE_NOT_FOUND');
    const installedCore = join(coreConsumer, 'node_modules/nestjs-redlock');
    expect(report.cjsResolved).toBe(
      join(installedCore, 'dist/cjs/core/index.js'),
    );
    expect(report.esmResolved).toBe(
      'file://' + join(installedCore, 'dist/esm/core/index.js'),
    );
    const names = Object.keys(coreSource).sort();
    expect(names).toEqual(
      expect.arrayContaining([
        'Redlock',
        'Lock',
        'FencedStore',
        'LockNotAcquiredError',
      ]),
    );
    expect(report.esmNames).toEqual(names);
    expect(report.cjsNames).toEqual(names);
    // Everything the core exports, the Nest entry exports too.
    expect(Object.keys(source)).toEqual(expect.arrayContaining(names));
    expect(report.esm).toEqual({ held: true, released: true });
    expect(report.cjs).toEqual({ held: true, released: true });
  });

  it("its typings compile in a CommonJS app whose lib stops at ES2021, with skipLibCheck off (Nest 11 apps' settings)", async () => {
    const app = join(consumer, 'es2021');
    mkdirSync(app, { recursive: true });
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2021',
          lib: ['ES2021'],
          module: 'commonjs',
          moduleResolution: 'node',
          ignoreDeprecations: '6.0',
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        files: ['app.ts'],
      }),
    );
    writeFileSync(
      join(app, 'app.ts'),
      [
        "import { Locked, LockService, RedlockModule } from 'nestjs-redlock';",
        "import { Redlock } from 'nestjs-redlock/core';",
        "import { RedlockTestingModule } from 'nestjs-redlock/testing';",
        'export const all = [Locked, LockService, RedlockModule, Redlock, RedlockTestingModule];',
      ].join('\n'),
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    // tsc prints its errors on stdout and exits non-zero.
    const { stdout } = await run(process.execPath, [tsc, '-p', app]).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? 'failed' }),
    );
    expect(stdout).toBe('');
  });

  it('an app that loads both copies still has one lock: @Locked from either copy, one call chain, errors recognised across copies', async () => {
    const report = await node('two-copies.cjs', {
      REDIS_URL: singleUrl(),
      KEY_PREFIX: uniquePrefix('dual'),
    });
    // Two copies of every class: the hazard this guards against is real.
    expect(report.distinctCopies).toBe(true);
    // @Locked from the ESM copy found the CommonJS copy's service.
    expect(report.placed).toBe(5);
    expect(report.overlaps).toBe(0);
    // Both copies see the lock of the running call (one AsyncLocalStorage),
    // so the nested call decorated by the other copy joined it instead of
    // waiting for it (it would have timed out after 1 s).
    expect(report.seen).toHaveLength(5);
    for (const seen of report.seen) {
      expect(seen.esmCurrent).toEqual(['sku:a']);
      expect(seen.cjsCurrent).toEqual(['sku:a']);
    }
    expect(report.refused).toEqual({
      name: 'LockNotAcquiredError',
      isRedlockError: true,
    });
  });

  it('quit() leaves nothing that keeps the process alive: it ends by itself after waiters, release messages and a watchdog, also with a node down', async () => {
    const started = Date.now();
    // node() rejects if the script does not end within its 60 s timeout.
    const report = await node('exits.mjs', {
      REDIS_URLS: quorumUrls().join(','),
      KEY_PREFIX: uniquePrefix('exit'),
      // A free port: nothing listens there, a node that is down.
      DOWN_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(report.cutOff).toBe('closed');
    // No socket, timer or immediate of the library left once quit() resolved.
    expect(report.open).toEqual([]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
