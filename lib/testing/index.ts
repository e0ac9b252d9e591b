// `nestjs-redlock/testing`: RedlockModule without Redis, for users' unit tests.
export {
  InMemoryRedlock,
  type InMemoryRedlockOptions,
} from './in-memory-redlock.js';
export {
  RedlockTestingModule,
  type RedlockTestingOptions,
} from './redlock-testing.module.js';
export { TestClock } from './test-clock.js';
