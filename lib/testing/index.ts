// `nestjs-redlock/testing`: RedlockModule without Redis, for users' unit tests.
export type { InMemoryRedlockOptions } from './in-memory-options.js';
export { InMemoryRedlock } from './in-memory-redlock.js';
export {
  RedlockTestingModule,
  type RedlockTestingOptions,
} from './redlock-testing.module.js';
export { TestClock } from './test-clock.js';
