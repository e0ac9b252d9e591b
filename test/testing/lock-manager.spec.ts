import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InjectRedlock,
  LockService,
  Redlock,
  REDLOCK,
  type LockManager,
} from 'nestjs-redlock';
import {
  InMemoryRedlock,
  RedlockTestingModule,
  TestClock,
} from 'nestjs-redlock/testing';
import { singleUrl, uniquePrefix } from '../utils/nodes.js';

// Compile-time (tsc --noEmit -p tsconfig.json checks this file): the lock
// and its double are both a LockManager, without a cast.
const makeDouble = (): LockManager => new InMemoryRedlock();
const makeReal = (): LockManager =>
  new Redlock({ clients: [singleUrl()], lazyConnect: true });

/**
 * Every member of the contract, listed once: a member added to or removed
 * from `LockManager` fails to compile here until this list follows.
 */
const MEMBERS: Record<keyof LockManager, true> = {
  stats: true,
  quorum: true,
  clock: true,
  keyPrefix: true,
  metaPrefix: true,
  isClosed: true,
  keyOf: true,
  acquire: true,
  tryAcquire: true,
  using: true,
  hold: true,
  watch: true,
  ready: true,
  health: true,
  inspect: true,
  quit: true,
  nodes: true,
  resolveTiming: true,
  extendLock: true,
  releaseLock: true,
  leaveLock: true,
};

@Injectable()
class Reports {
  constructor(@InjectRedlock() readonly redlock: LockManager) {}

  nightly(): Promise<string> {
    return this.redlock.using('report:nightly', (lock) => lock.resources[0]);
  }
}

describe('LockManager: one contract for Redlock and InMemoryRedlock', () => {
  it('both have every member of the contract', async () => {
    const real = makeReal();
    const double = makeDouble();
    try {
      for (const member of Object.keys(MEMBERS)) {
        expect({ member, real: member in real }).toEqual({
          member,
          real: true,
        });
        expect({ member, memory: member in double }).toEqual({
          member,
          memory: true,
        });
      }
    } finally {
      await Promise.all([real.quit(), double.quit()]);
    }
  });

  it('RedlockTestingModule gives its InMemoryRedlock as the lock set lock manager, typed by the contract alone', async () => {
    const clock = new TestClock();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockTestingModule.forRoot({ clock, keyPrefix: uniquePrefix('lm') }),
      ],
      providers: [Reports],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const double = app.get(InMemoryRedlock);
      const manager: LockManager = app.get(LockService).redlock;
      expect(manager).toBe(double);
      expect(app.get(REDLOCK)).toBe(double);
      const reports = app.get(Reports);
      expect(reports.redlock).toBe(double);
      await expect(reports.nightly()).resolves.toBe('report:nightly');
      expect(manager.stats.acquired).toBe(1);
      expect(await manager.health()).toMatchObject({
        healthy: true,
        quorum: 1,
      });
    } finally {
      await app.close();
    }
  });
});
