import {
  InMemoryRedlock,
  RedlockTestingModule,
  TestClock,
} from 'nestjs-redlock/testing';
import { describeLockContract } from './lock-contract.js';

// The same contract on the in-memory lock of nestjs-redlock/testing, on a
// test clock that moves only when the contract says so.
let clock = new TestClock();

describeLockContract('InMemoryRedlock (nestjs-redlock/testing)', {
  lockModule: (keyPrefix) => {
    clock = new TestClock();
    return RedlockTestingModule.forRoot({ clock, keyPrefix });
  },
  advance: (ms) => clock.advance(ms),
  lose(app, lock) {
    app.get(InMemoryRedlock).loseLock(lock.resources[0]);
    return Promise.resolve();
  },
});
