// jest in ESM mode (run with node --experimental-vm-modules): ts-jest emits
// ES modules, and the `.js` extensions of relative imports map to the .ts
// sources.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testRegex: 'test/.*\\.(e2e-)?spec\\.ts$',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testTimeout: 30_000,
};
