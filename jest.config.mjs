/**
 * jest in ESM mode (run with `node --experimental-vm-modules`), ts-jest
 * compiling with the same TypeScript as the build. The package name maps to
 * the source so tests and the sample import it as users do.
 *
 * @type {import('jest').Config}
 */
export default {
  rootDir: '.',
  // Node's, with each test's console shown only when it fails.
  testEnvironment: '<rootDir>/test/utils/quiet-environment.mjs',
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  testMatch: ['<rootDir>/test/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  // Consumer app templates: run by test/consumers/run.mjs in apps of their own.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/consumers/apps/'],
  modulePathIgnorePatterns: ['<rootDir>/test/consumers/apps/'],
  moduleNameMapper: {
    '^nestjs-redlock$': '<rootDir>/lib/index.ts',
    '^nestjs-redlock/(core|testing|terminus|otel)$': '<rootDir>/lib/$1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  // `npm run test:declared`: every script the library sends fails on a key
  // it did not declare (test/utils/declared-keys-check.ts). In `.ci/run`, a
  // failed test runs once more, its first failure printed (ci-retry.ts).
  setupFilesAfterEnv: [
    ...(process.env.REDLOCK_DECLARED_KEYS_CHECK === '1'
      ? ['<rootDir>/test/utils/declared-keys-check.ts']
      : []),
    '<rootDir>/test/utils/ci-retry.ts',
  ],
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 2,
};
