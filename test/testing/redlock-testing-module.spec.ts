import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  getRedlockToken,
  InjectLockService,
  Locked,
  LockService,
  RedlockModule,
} from 'nestjs-redlock';
import {
  InMemoryRedlock,
  RedlockTestingModule,
  TestClock,
} from 'nestjs-redlock/testing';

// The module itself: how it takes RedlockModule's place. Its lock semantics
// are the shared contract's (test/contract).

/** A port nothing listens on: a RedlockModule that connected would fail to. */
const NOWHERE = 'redis://127.0.0.1:1';

describe('RedlockTestingModule', () => {
  it("replaces an app's RedlockModule import, by reference, so the app runs without Redis", async () => {
    const LocksModule = RedlockModule.forRoot({ clients: [NOWHERE] });
    @Module({ imports: [LocksModule] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideModule(LocksModule)
      .useModule(RedlockTestingModule.forRoot())
      .compile();
    const app = await moduleRef.init();
    const locks = app.get(LockService);
    expect(locks.redlock).toBe(app.get(InMemoryRedlock));
    const lock = await locks.acquire('x', { waitTimeout: 0 });
    expect(lock.isHeld).toBe(true);
    await app.close();
    expect(lock.isHeld).toBe(false);
  });

  it('registers a named lock set in memory beside the default one', async () => {
    @Injectable()
    class Payments {
      constructor(@InjectLockService('payments') readonly locks: LockService) {}

      @Locked('pay:<id>', { lockSet: 'payments' })
      async pay(id: string): Promise<string | undefined> {
        await Promise.resolve();
        return this.locks.current()?.resources[0] === `pay:${id}`
          ? id
          : undefined;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockTestingModule.forRoot(),
        RedlockTestingModule.forRoot({ name: 'payments' }),
      ],
      providers: [Payments],
    }).compile();
    const app = await moduleRef.init();
    const payments = app.get<InMemoryRedlock>(getRedlockToken('payments'));
    expect(payments).toBeInstanceOf(InMemoryRedlock);
    expect(payments).not.toBe(app.get(InMemoryRedlock));
    expect(app.get(Payments).locks.redlock).toBe(payments);
    await expect(app.get(Payments).pay('3')).resolves.toBe('3');
    // The default set does not see the payments set's locks.
    const held = await payments.acquire('pay:4');
    expect(app.get(InMemoryRedlock).holderOf('pay:4')).toBeUndefined();
    expect(payments.holderOf('pay:4')).toBe(held);
    await app.close();
  });

  it('a TestClock moves only forward, when told', async () => {
    const clock = new TestClock(1_000_000);
    expect(clock.now()).toBe(0);
    await clock.advance(250);
    expect(clock.now()).toBe(250);
    expect(clock.toEpoch(clock.now())).toBe(1_000_250);
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
  });
});
