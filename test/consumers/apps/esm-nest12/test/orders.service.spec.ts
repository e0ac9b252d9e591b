import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockNotAcquiredError, LockService } from 'nestjs-redlock';
import {
  InMemoryRedlock,
  RedlockTestingModule,
  TestClock,
} from 'nestjs-redlock/testing';
import { CounterStore } from '../src/counter.store.js';
import { OrdersService } from '../src/orders.service.js';

/** The counters in a Map, so the unit test needs no Redis at all. */
@Injectable()
class MemoryCounterStore {
  private readonly counts = new Map<string, number>();

  async read(id: string): Promise<number> {
    return this.counts.get(id) ?? 0;
  }

  async write(id: string, count: number): Promise<void> {
    this.counts.set(id, count);
  }
}

async function compile(clock?: TestClock) {
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockTestingModule.forRoot({ clock, waitTimeout: 3_000 })],
    providers: [
      OrdersService,
      { provide: CounterStore, useClass: MemoryCounterStore },
    ],
  }).compile();
  return moduleRef.init();
}

describe('OrdersService without Redis (RedlockTestingModule)', () => {
  it('serialises concurrent increments of one order', async () => {
    const app = await compile();
    const orders = app.get(OrdersService);
    const counts = await Promise.all(
      Array.from({ length: 10 }, () => orders.increment('42')),
    );
    expect(counts.sort((x, y) => x - y)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    expect(await orders.count('42')).toBe(10);
    await app.close();
  });

  it('refuses an increment while the order is locked elsewhere, after waitTimeout on the test clock', async () => {
    const clock = new TestClock();
    const app = await compile(clock);
    const orders = app.get(OrdersService);
    const held = await app.get(LockService).acquire('order:7');
    expect(app.get(InMemoryRedlock).holderOf('order:7')?.isHeld).toBe(true);

    const refused = orders.increment('7').catch((error: unknown) => error);
    await clock.advance(3_000);
    const error = await refused;
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('busy');
    expect(await orders.count('7')).toBe(0);

    await held.release();
    expect(await orders.increment('7')).toBe(1);
    await app.close();
  });
});
