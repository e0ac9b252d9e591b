import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  LockKeyError,
  LockNotAcquiredError,
  LockService,
  LockServiceUnavailableError,
  Redlock,
} from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { OrdersService } from '../fixtures/orders.fixture.js';
import { sleep, Tracker } from '../fixtures/tracker.js';
import { closeAll, flushed, inspect, quorumUrls } from '../utils/nodes.js';

describe('@Locked on a service method (five real Redis nodes)', () => {
  let t: TestApp;
  let svc: OrdersService;
  let tracker: Tracker;
  let nodes: Redis[];

  beforeAll(async () => {
    t = await createApp({ providers: [Tracker, OrdersService] });
    svc = t.app.get(OrdersService);
    tracker = t.app.get(Tracker);
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await t.close();
    await closeAll(nodes);
  });

  const keysLeft = async (resource: string) => {
    await flushed(t.app.get(Redlock));
    return (
      await Promise.all(nodes.map((n) => n.exists(t.prefix + resource)))
    ).reduce((a, b) => a + b, 0);
  };

  it('runs two concurrent calls on the same key one after the other', async () => {
    const before = tracker.intervals.length;
    const results = await Promise.all([svc.slow('1', 200), svc.slow('1', 200)]);
    expect(results).toEqual(['done 1', 'done 1']);
    const [a, b] = tracker.intervals
      .slice(before)
      .sort((x, y) => x.start - y.start);
    expect(b.start).toBeGreaterThanOrEqual(a.end);
    expect(tracker.maxActive.get('order:1')).toBe(1);
    expect(await keysLeft('order:1')).toBe(0);
  });

  it('runs calls on different keys at the same time', async () => {
    const before = tracker.intervals.length;
    await Promise.all([svc.slow('2', 400), svc.slow('3', 400)]);
    const [a, b] = tracker.intervals
      .slice(before)
      .sort((x, y) => x.start - y.start);
    expect(b.start).toBeLessThan(a.end);
  });

  it('locks every SKU of <dto.items.*.sku>, sorted and de-duplicated', async () => {
    const dto = {
      items: [
        { sku: 'C', qty: 1 },
        { sku: 'A', qty: 1 },
        { sku: 'C', qty: 2 },
      ],
    };
    const running = svc.placeOrder(dto, 400);
    await sleep(150);
    for (const sku of ['sku:A', 'sku:C']) {
      expect(await t.other.tryAcquire(sku)).toBeNull();
      expect(await keysLeft(sku)).toBe(5);
    }
    expect(await running).toEqual(['sku:A', 'sku:C']);
    expect(await keysLeft('sku:A')).toBe(0);
    expect(await keysLeft('sku:C')).toBe(0);
  });

  it('serves orders with overlapping SKUs in any order without deadlock or overlap', async () => {
    const skus = ['P', 'Q', 'R', 'S'];
    const orders = Array.from({ length: 12 }, (_, i) => ({
      items: [skus[i % 4], skus[(i + 1) % 4], skus[(i + 3) % 4]]
        .reverse()
        .map((sku) => ({ sku, qty: 1 })),
    }));
    const results = await Promise.all(orders.map((o) => svc.placeOrder(o, 20)));
    expect(results).toHaveLength(12);
    for (const sku of skus) expect(tracker.maxActive.get(`sku:${sku}`)).toBe(1);
  });

  it('releases the lock when the method throws, and the error propagates unchanged', async () => {
    const error = await svc.fails('9').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe('boom 9');
    expect(await keysLeft('throw:9')).toBe(0);
    const next = await t.other.tryAcquire('throw:9');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it.each([
    ['undefined', { sku: undefined }, /<dto.sku> got undefined/],
    ['null', { sku: null }, /<dto.sku> got null/],
    ['an object', { sku: { id: 1 } }, /<dto.sku> got a Object/],
    ['an empty string', { sku: '' }, /<dto.sku> got an empty string/],
    ['an empty list', { sku: [] }, /<dto.sku> got an empty list/],
    [
      'a missing argument',
      undefined,
      /cannot read "sku" of dto: it is undefined/,
    ],
  ])(
    'rejects %s with LockKeyError, without running the method or calling Redis',
    async (_, dto, message) => {
      const redlock = t.app.get(Redlock);
      const acquire = jest.spyOn(redlock, 'acquire');
      const calls = tracker.count('bad');
      const error = await svc.bad(dto).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockKeyError);
      expect((error as LockKeyError).message).toMatch(/OrdersService\.bad/);
      expect((error as LockKeyError).placeholder).toBe('<dto.sku>');
      expect((error as LockKeyError).message).toMatch(message);
      expect(tracker.count('bad')).toBe(calls);
      expect(acquire).not.toHaveBeenCalled();
      acquire.mockRestore();
    },
  );

  it('locks a method whose body is synchronous (the call returns a Promise)', async () => {
    const result = svc.syncDouble(21) as unknown;
    expect(result).toBeInstanceOf(Promise);
    expect(await result).toBe(42);
  });

  it('lets a nested call on a held resource join instead of deadlocking', async () => {
    const [outer, inner] = await svc.outer('n1');
    expect(outer).toEqual(['nest:n1']);
    // The inner call named extra:none too: it acquired only that one.
    expect(inner).toEqual(['extra:none']);
    expect(await keysLeft('nest:n1')).toBe(0);
    expect(await keysLeft('extra:none')).toBe(0);
  });

  it('keeps other call chains waiting while a nested call joins', async () => {
    const before = tracker.intervals.length;
    const [, outside] = await Promise.all([
      svc.outer('n2', 'x'),
      (async () => {
        await sleep(10);
        return svc.inner('n2', 'y');
      })(),
    ]);
    expect(outside).toEqual(['extra:y', 'nest:n2']);
    const inner = tracker.intervals
      .slice(before)
      .filter((i) => i.name === 'inner');
    expect(inner).toHaveLength(2);
    expect(tracker.maxActive.get('nest:n2')).toBe(1);
  });

  it('a nested call not awaited keeps the resources it joined until it is done, even while it waits for others', async () => {
    const locks = t.app.get(LockService);
    const blocker = await t.other.acquire('stock:A');
    let nested: Promise<string> | undefined;
    let outerDone = false;
    const outer = locks
      .run('order:1', () => {
        // Fire and forget: joins order:1, then waits for stock:A.
        nested = locks.run(['order:1', 'stock:A'], () => 'ran', {
          waitTimeout: 5000,
        });
      })
      .then(() => (outerDone = true));
    await sleep(200);
    // The outer call returned, but order:1 stays held for the nested one.
    expect(outerDone).toBe(false);
    expect(await t.other.tryAcquire('order:1')).toBeNull();
    await blocker.release();
    expect(await nested).toBe('ran');
    await outer;
    expect(outerDone).toBe(true);
    expect(await keysLeft('order:1')).toBe(0);
  });

  it("skips the method with onNotAcquired: 'skip' when another holder has it", async () => {
    const results = await Promise.all([svc.cron(), svc.cron(), svc.cron()]);
    expect(results.filter((r) => r === 'ran')).toHaveLength(1);
    expect(results.filter((r) => r === undefined)).toHaveLength(2);
  });

  it("rejects with LockNotAcquiredError after waitTimeout when another process holds it (onNotAcquired: 'throw')", async () => {
    const held = await t.other.acquire('nest:held');
    try {
      const calls = tracker.count('inner');
      const error = await svc.inner('held', 'x').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).resources).toEqual([
        'extra:x',
        'nest:held',
      ]);
      expect(tracker.count('inner')).toBe(calls);
      expect(await keysLeft('extra:x')).toBe(0); // all or nothing
    } finally {
      await held.release();
    }
  });

  it('throws a clear error for a detached call or an instance made with new, and never runs unlocked', async () => {
    const calls = tracker.count('slow');
    const detached = svc.slow;
    const e1 = await detached('d', 0).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(LockServiceUnavailableError);
    expect((e1 as Error).message).toMatch(/OrdersService\.slow.*detached/);
    const manual = new OrdersService(tracker, undefined as never);
    const e2 = await manual.slow('d', 0).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(LockServiceUnavailableError);
    expect((e2 as Error).message).toMatch(
      /OrdersService\.slow.*created with `new`/,
    );
    expect(tracker.count('slow')).toBe(calls);
  });

  it('holds the lock of an Observable method per subscription until it completes', async () => {
    const ticks = svc.ticks('o1', 4);
    expect(await keysLeft('obs:o1')).toBe(0); // nothing until subscribed
    const values: string[] = [];
    const done = new Promise<void>((resolve, reject) =>
      ticks.subscribe({
        next: (v) => values.push(v),
        complete: resolve,
        error: reject,
      }),
    );
    await sleep(200);
    expect(await t.other.tryAcquire('obs:o1')).toBeNull();
    await done;
    expect(values).toEqual(['o1:0', 'o1:1', 'o1:2', 'o1:3']);
    expect(await keysLeft('obs:o1')).toBe(0);
  });

  it('releases the lock of an Observable method when the subscriber unsubscribes', async () => {
    const subscription = svc.ticks('o2', 100).subscribe();
    await sleep(250);
    expect(await keysLeft('obs:o2')).toBe(5);
    subscription.unsubscribe();
    const next = await t.other.acquire('obs:o2', { waitTimeout: 2000 });
    expect(next.isHeld).toBe(true);
    await next.release();
  });
});
