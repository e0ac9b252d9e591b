import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ConflictException, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockService } from 'nestjs-redlock';
import { AppModule } from '../../sample/src/app.module.js';
import { ConfigService } from '@nestjs/config';
import { validate } from '../../sample/src/config/environment.js';
import {
  StockRepository,
  skuResource,
} from '../../sample/src/stock/stock.repository.js';
import { fireOrders, type OrderLine } from '../../sample/demo/burst.js';
import { PSP_CONCURRENCY } from '../../sample/src/payments/psp.client.js';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

/**
 * The sample app (sample/src) booted as in production, on the five shared
 * quorum servers under a unique prefix (locks, stock and orders), driven
 * over real HTTP.
 */
async function bootSample(
  prefix: string,
  lockWaitTimeoutMs: number,
): Promise<{ app: INestApplication; url: string }> {
  // As the app meets it in production: environment variables, validated.
  const env = validate({
    REDIS_URLS: quorumUrls().join(', '),
    STOCK_REDIS_URL: quorumUrls()[0],
    KEY_PREFIX: prefix,
    LOCK_WAIT_TIMEOUT_MS: String(lockWaitTimeoutMs),
  });
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(ConfigService)
    .useValue(new ConfigService(env))
    .compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

async function send(
  url: string,
  method: string,
  body?: unknown,
  raw?: string,
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/**
 * Single-unit orders for every SKU (more than its stock, so a correct run
 * sells out exactly) mixed with orders spanning two or three SKUs.
 */
function orders(a: string, b: string, c: string, count: number): OrderLine[][] {
  const one = (sku: string) => ({ sku, qty: 1 });
  const mix = [
    [one(a)],
    [one(b)],
    [one(c)],
    [one(a), one(b)],
    [one(c), one(b)],
    [one(b), one(a), one(c)],
    [one(a)],
  ];
  return Array.from({ length: count }, (_, i) => mix[i % mix.length]);
}

describe('sample app: POST /orders on real Redis', () => {
  const prefix = uniquePrefix('sample');
  let app: INestApplication;
  let url: string;
  let nodes: Redis[];

  beforeAll(async () => {
    ({ app, url } = await bootSample(prefix, 20_000));
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await app?.close();
    for (const node of nodes) {
      const keys = await scanKeys(node, `${prefix}*`);
      if (keys.length) await node.del(...keys);
    }
    await closeAll(nodes);
  });

  const seed = async (stock: Record<string, number>) => {
    for (const [sku, quantity] of Object.entries(stock))
      expect(
        (await send(`${url}/stock/${sku}`, 'PUT', { quantity })).status,
      ).toBe(200);
  };
  /** Fires the burst while sampling the stock in Redis; returns the burst and the lowest level seen. */
  const burst = async (
    skus: string[],
    locking: 'on' | 'off',
    count: number,
  ) => {
    const store = nodes[0];
    const keys = skus.map((sku) => `${prefix}stock:${sku}`);
    let lowest = Infinity;
    let running = true;
    const watcher = (async () => {
      while (running) {
        for (const value of await store.mget(keys))
          lowest = Math.min(lowest, Number(value));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const [a, b, c] = skus;
    const result = await fireOrders(url, orders(a, b, c, count), {
      locking,
      concurrency: count,
    });
    running = false;
    await watcher;
    const left = (await store.mget(keys)).map(Number);
    return { result, lowest: Math.min(lowest, ...left), left };
  };

  it('with the lock, concurrent orders sell exactly the stock: every SKU ends at 0, never below', async () => {
    const stock = { 'lk-a': 25, 'lk-b': 10, 'lk-c': 10 };
    await seed(stock);
    const { result, lowest, left } = await burst(Object.keys(stock), 'on', 140);

    expect(result.failures).toEqual([]);
    expect(result.accepted + result.soldOut + result.lockBusy).toBe(140);
    for (const [sku, initial] of Object.entries(stock))
      expect({ sku, sold: result.unitsSold.get(sku) }).toEqual({
        sku,
        sold: initial,
      });
    expect(left).toEqual([0, 0, 0]);
    expect(lowest).toBe(0);
    // The order log agrees with the answers: one entry per accepted order, all locked.
    const log = (await nodes[0].lrange(`${prefix}orders`, 0, -1)).map((e) =>
      JSON.parse(e),
    );
    const locked = log.filter((o) =>
      o.items.some((i: OrderLine) => i.sku in stock),
    );
    expect(locked).toHaveLength(result.accepted);
    expect(locked.every((o) => o.locked === true)).toBe(true);
  });

  it('without the lock (?locking=off) the same burst oversells (the control of the test above)', async () => {
    const stock = { 'nl-a': 25, 'nl-b': 10, 'nl-c': 10 };
    await seed(stock);
    const { result, left } = await burst(Object.keys(stock), 'off', 140);

    expect(result.failures).toEqual([]);
    expect(result.lockBusy).toBe(0);
    const oversold = Object.entries(stock).reduce(
      (units, [sku, initial]) =>
        units + Math.max(0, (result.unitsSold.get(sku) ?? 0) - initial),
      0,
    );
    console.info(
      `without the lock: ${result.accepted} of 140 orders accepted, ${oversold} units oversold, stock left ${left.join('/')}`,
    );
    // 140 orders at once with 5 ms between each read and its write: the
    // interleaving the lock prevents happens (hundreds of units in the demo).
    expect(oversold).toBeGreaterThan(0);
  });

  it('GET /health reports the lock nodes through terminus: up, with each node', async () => {
    const { status, body } = await send(`${url}/health`, 'GET');
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.info.locks).toMatchObject({ status: 'up', up: 5, quorum: 3 });
    expect(body.info.locks.nodes).toHaveLength(5);
  });

  it('answers 409 OUT_OF_STOCK with the shortage and leaves the stock as it was', async () => {
    await seed({ 'oos-a': 1, 'oos-b': 5 });
    const res = await send(`${url}/orders`, 'POST', {
      items: [
        { sku: 'oos-b', qty: 2 },
        { sku: 'oos-a', qty: 2 },
      ],
    });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      statusCode: 409,
      code: 'OUT_OF_STOCK',
      shortages: [{ sku: 'oos-a', requested: 2, available: 1 }],
    });
    expect(res.body.reason).toBeUndefined();
    expect((await send(`${url}/stock/oos-a`, 'GET')).body.quantity).toBe(1);
    expect((await send(`${url}/stock/oos-b`, 'GET')).body.quantity).toBe(5);
  });

  it('merges lines of the same SKU before checking the stock', async () => {
    await seed({ 'dup-a': 3 });
    const item = { sku: 'dup-a', qty: 2 };
    expect(
      (await send(`${url}/orders`, 'POST', { items: [item, item] })).status,
    ).toBe(409);
    const ok = await send(`${url}/orders`, 'POST', {
      items: [item, { sku: 'dup-a', qty: 1 }],
    });
    expect(ok.status).toBe(201);
    expect(ok.body.items).toEqual([{ sku: 'dup-a', qty: 3 }]);
    expect((await send(`${url}/stock/dup-a`, 'GET')).body.quantity).toBe(0);
  });

  it.each([
    ['no body', undefined, 'items'],
    ['no items', {}, 'items'],
    ['empty items', { items: [] }, 'items'],
    ['items not an array', { items: 'x' }, 'items'],
    ['missing sku', { items: [{ qty: 1 }] }, 'sku'],
    ['empty sku', { items: [{ sku: '', qty: 1 }] }, 'sku'],
    ['sku with a space', { items: [{ sku: 'a b', qty: 1 }] }, 'sku'],
    ['qty 0', { items: [{ sku: 'v-a', qty: 0 }] }, 'qty'],
    ['negative qty', { items: [{ sku: 'v-a', qty: -1 }] }, 'qty'],
    ['fractional qty', { items: [{ sku: 'v-a', qty: 1.5 }] }, 'qty'],
    ['qty as a string', { items: [{ sku: 'v-a', qty: '2' }] }, 'qty'],
    ['missing qty', { items: [{ sku: 'v-a' }] }, 'qty'],
    ['an item that is not an object', { items: [7] }, 'items'],
    [
      'an unknown field',
      { items: [{ sku: 'v-a', qty: 1 }], coupon: 'x' },
      'coupon',
    ],
  ])('answers 400 for %s, naming the field', async (_case, body, field) => {
    await seed({ 'v-a': 5 });
    const res = await send(`${url}/orders`, 'POST', body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.message)).toContain(field);
    expect((await send(`${url}/stock/v-a`, 'GET')).body.quantity).toBe(5);
  });

  it('answers 400 for malformed JSON and an unknown ?locking value', async () => {
    expect(
      (await send(`${url}/orders`, 'POST', undefined, '{"items": [')).status,
    ).toBe(400);
    const res = await send(`${url}/orders?locking=maybe`, 'POST', {
      items: [{ sku: 'v-a', qty: 1 }],
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.message)).toContain('locking');
  });

  it('restocks under the SKU lock (LockService.run) and adds to the level', async () => {
    await seed({ 're-a': 2 });
    const res = await send(`${url}/stock/re-a/restock`, 'POST', { qty: 3 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ sku: 're-a', quantity: 5 });
    expect(
      (await send(`${url}/stock/re-a/restock`, 'POST', { qty: 0 })).status,
    ).toBe(400);
  });

  it('refuses the stock write of a holder paused past its lease (fencing), after a newer holder wrote', async () => {
    await seed({ fence: 10 });
    const locks = app.get(LockService);
    const repo = app.get(StockRepository);
    let paused!: Promise<unknown>;
    const readByPaused = new Promise<number>((resolve) => {
      paused = locks.run(
        skuResource('fence'),
        async () => {
          resolve((await repo.read(['fence'])).get('fence')!);
          // A long GC: the watchdog stops at maxHold, the lease runs out.
          await new Promise((r) => setTimeout(r, 700));
          await repo.write(new Map([['fence', 9]]));
        },
        { fencing: true, ttl: 200, maxHold: 1, onLockLost: 'ignore' },
      );
    });
    expect(await readByPaused).toBe(10);
    // The newer holder gets the lock once the old lease expired, and sells 3.
    await locks.run(
      skuResource('fence'),
      async () => {
        const level = (await repo.read(['fence'])).get('fence')!;
        await repo.write(new Map([['fence', level - 3]]));
      },
      { fencing: true, waitTimeout: 2000 },
    );
    const refused = await paused.catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConflictException);
    expect((refused as ConflictException).getResponse()).toMatchObject({
      code: 'STALE_LOCK',
    });
    expect(Number(await nodes[0].get(`${prefix}stock:fence`))).toBe(7);
  });
});

describe('sample app: a SKU locked elsewhere', () => {
  const prefix = uniquePrefix('sample');
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    // A short wait so the busy case answers quickly.
    ({ app, url } = await bootSample(prefix, 300));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 409 with the lock filter body (resources, reason, Retry-After), distinct from out of stock', async () => {
    expect(
      (await send(`${url}/stock/held`, 'PUT', { quantity: 5 })).status,
    ).toBe(200);
    const lock = await app
      .get(LockService)
      .acquire('sku:held', { ttl: 10_000 });
    try {
      const order = await send(`${url}/orders`, 'POST', {
        items: [{ sku: 'held', qty: 1 }],
      });
      expect(order.status).toBe(409);
      expect(order.body).toMatchObject({
        statusCode: 409,
        resources: ['sku:held'],
        reason: 'busy',
      });
      // Told apart from out of stock (`code: 'OUT_OF_STOCK'`) by its code.
      expect(order.body.code).toBe('CONFLICT');
      expect(Number(order.headers.get('retry-after'))).toBeGreaterThanOrEqual(
        1,
      );
      const restock = await send(`${url}/stock/held/restock`, 'POST', {
        qty: 1,
      });
      expect(restock.status).toBe(409);
      // The unlocked flow ignores the lock: that is the point of the comparison.
      expect(
        (
          await send(`${url}/orders?locking=off`, 'POST', {
            items: [{ sku: 'held', qty: 1 }],
          })
        ).status,
      ).toBe(201);
    } finally {
      await lock.release();
    }
    expect((await send(`${url}/stock/held`, 'GET')).body.quantity).toBe(4);
  });

  it('answers a payment 409 with the lock filter body while every permit of the provider is held, 201 once one frees', async () => {
    const held = await Promise.all(
      Array.from({ length: PSP_CONCURRENCY }, () =>
        app
          .get(LockService)
          .acquire('psp', { permits: PSP_CONCURRENCY, ttl: 10_000 }),
      ),
    );
    const payment = { orderId: 'late', amount: 1 };
    try {
      const busy = await send(`${url}/payments`, 'POST', payment);
      expect(busy.status).toBe(409);
      expect(busy.body).toMatchObject({
        code: 'CONFLICT',
        reason: 'busy',
        resources: ['psp'],
      });
      expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      await held.pop()!.release();
      expect((await send(`${url}/payments`, 'POST', payment)).status).toBe(201);
    } finally {
      await Promise.all(held.map((lock) => lock.release()));
    }
  });
});

describe('sample app: payments under a semaphore, the catalogue under a read/write lock (two replicas)', () => {
  const prefix = uniquePrefix('sample');
  const replicas: { app: INestApplication; url: string }[] = [];
  let nodes: Redis[];

  beforeAll(async () => {
    // Two instances of the app on the same nodes and data: two replicas.
    for (let i = 0; i < 2; i++) replicas.push(await bootSample(prefix, 20_000));
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await Promise.all(replicas.map(({ app }) => app.close()));
    for (const node of nodes) {
      const keys = await scanKeys(node, `${prefix}*`);
      if (keys.length) await node.del(...keys);
    }
    await closeAll(nodes);
  });

  /** `count` requests at once, alternating between the replicas. */
  const burst = (
    count: number,
    request: (url: string, i: number) => Promise<{ status: number; body: any }>,
  ) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        request(replicas[i % replicas.length].url, i),
      ),
    );
  const pay = (query: string) => (url: string, i: number) =>
    send(`${url}/payments${query}`, 'POST', {
      orderId: `o-${i}`,
      amount: 100 + i,
    });

  it(`with @Locked('psp', { permits: ${PSP_CONCURRENCY} }), the provider never sees more than ${PSP_CONCURRENCY} calls at once over both replicas, and refuses none`, async () => {
    const [{ url }] = replicas;
    expect(
      (await fetch(`${url}/payments/psp`, { method: 'DELETE' })).status,
    ).toBe(204);
    const answers = await burst(64, pay(''));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));
    expect(answers[0].body).toMatchObject({ orderId: 'o-0', amount: 100 });
    const { body: psp } = await send(`${url}/payments/psp`, 'GET');
    expect(psp).toEqual({
      calls: 64,
      refused: 0,
      inFlight: 0,
      maxInFlight: PSP_CONCURRENCY,
    });
  });

  it('without it (?limit=off) the same burst goes past the provider limit and is refused (the control of the test above)', async () => {
    const [{ url }] = replicas;
    await fetch(`${url}/payments/psp`, { method: 'DELETE' });
    const answers = await burst(64, pay('?limit=off'));
    const refused = answers.filter((a) => a.status === 502);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body).toMatchObject({ code: 'PSP_REFUSED' });
    const { body: psp } = await send(`${url}/payments/psp`, 'GET');
    expect(psp.maxInFlight).toBeGreaterThan(PSP_CONCURRENCY);
    expect(psp.refused).toBe(refused.length);
  });

  const seedCatalogue = async (url: string) => {
    const items = Array.from({ length: 20 }, (_, i) => ({
      sku: `item-${String(i).padStart(2, '0')}`,
      price: 1000 + i,
    }));
    const res = await send(`${url}/catalogue`, 'PUT', { items });
    expect(res.status).toBe(200);
    expect(res.body.consistent).toBe(true);
  };
  /**
   * Three reprices over both replicas while eight readers read in a loop
   * until they are done; how many reads saw two versions, and the
   * versions left.
   */
  const readWhileRepricing = async (query: string) => {
    let repricing = true;
    let reads = 0;
    let torn = 0;
    const failures: string[] = [];
    const readers = Array.from({ length: 8 }, async (_, r) => {
      while (repricing) {
        const res = await send(
          `${replicas[r % 2].url}/catalogue${query}`,
          'GET',
        );
        if (res.status !== 200) failures.push(`read ${res.status}`);
        reads++;
        if (!res.body.consistent) torn++;
      }
    });
    const reprices = await Promise.all(
      [0, 1, 2].map((i) =>
        send(`${replicas[i % 2].url}/catalogue/reprice${query}`, 'POST', {
          percent: 10,
        }),
      ),
    );
    repricing = false;
    await Promise.all(readers);
    for (const res of reprices)
      if (res.status !== 201) failures.push(`reprice ${res.status}`);
    expect(failures).toEqual([]);
    const final = await send(`${replicas[0].url}/catalogue`, 'GET');
    return {
      reads,
      torn,
      versions: new Set(
        final.body.items.map((i: { version: number }) => i.version),
      ),
    };
  };

  it("with the read/write lock, reads (mode: 'read') never see a catalogue half repriced (mode: 'write'), and every reprice lands whole", async () => {
    await seedCatalogue(replicas[0].url);
    const { reads, torn, versions } = await readWhileRepricing('');
    expect(reads).toBeGreaterThan(8);
    expect(torn).toBe(0);
    expect([...versions]).toEqual([4]);
  });

  it('without it (?locking=off) reads see items of two versions (the control of the test above)', async () => {
    await seedCatalogue(replicas[0].url);
    const { reads, torn } = await readWhileRepricing('?locking=off');
    console.info(
      `without the lock: ${torn} of ${reads} reads saw a catalogue half repriced`,
    );
    expect(torn).toBeGreaterThan(0);
  });
});
