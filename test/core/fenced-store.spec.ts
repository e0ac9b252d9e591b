import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  FencedStore,
  fenceOf,
  Redlock,
  RedlockConfigError,
  StaleFencingTokenError,
  type Lock,
} from 'nestjs-redlock';
import {
  closeAll,
  inspect,
  quorumUrls,
  singleUrl,
  uniquePrefix,
} from '../utils/nodes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('FencedStore: guarded writes to data in Redis', () => {
  const prefix = uniquePrefix('store');
  let redis: Redis;
  let store: FencedStore;
  let redlock: Redlock;

  beforeAll(() => {
    [redis] = inspect([singleUrl()]);
    store = new FencedStore(redis, { prefix: `${prefix}fenced:` });
    redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: `${prefix}lock:`,
      metaPrefix: `${prefix}meta:`,
      fencing: true,
      retryDelay: 5,
      retryJitter: 10,
    });
  });
  afterAll(async () => {
    await redlock.quit();
    await closeAll([redis]);
  });

  it('applies writes with the same or a newer token and refuses an older one, applying none of it', async () => {
    const k = `${prefix}k`;
    const res = 'r1';
    expect(
      await store.exec({ resource: res, token: '5' }, [['SET', k, 'a']]),
    ).toEqual(['OK']);
    // The same holder writes again with its own token.
    await store.set({ resource: res, token: '5' }, k, 'b');
    expect(await store.highest(res)).toBe('5');
    const error = await store
      .exec({ resource: res, token: '4' }, [
        ['SET', k, 'stale'],
        ['SET', `${k}:other`, 'stale'],
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleFencingTokenError);
    expect(error).toMatchObject({ resource: res, token: '4', highest: '5' });
    expect(await redis.get(k)).toBe('b');
    expect(await redis.exists(`${k}:other`)).toBe(0);
    await store.set({ resource: res, token: '6' }, k, 'c');
    expect(await store.highest(res)).toBe('6');
    expect(await redis.get(k)).toBe('c');
  });

  it('compares tokens as numbers of any length, not as text', async () => {
    const fence = (token: string) => ({ resource: 'r2', token });
    await store.set(fence('9'), `${prefix}n`, 1);
    await store.set(fence('10'), `${prefix}n`, 2); // "10" < "9" as text
    await expect(store.set(fence('9'), `${prefix}n`, 3)).rejects.toThrow(
      StaleFencingTokenError,
    );
    await store.set(fence('18446744073709551617'), `${prefix}n`, 4);
    await expect(
      store.set(fence('18446744073709551616'), `${prefix}n`, 5),
    ).rejects.toThrow(StaleFencingTokenError);
    expect(await redis.get(`${prefix}n`)).toBe('4');
  });

  it("writes through a client with an ioredis keyPrefix under that prefix, as the client's own commands do", async () => {
    const appPrefix = `${prefix}app:`;
    const prefixed = new Redis(singleUrl(), { keyPrefix: appPrefix });
    const fence = (token: string) => ({ resource: 'rp', token });
    try {
      const own = new FencedStore(prefixed, { prefix: 'fenced:' });
      await own.set(fence('3'), 'k', 'v');
      await expect(own.set(fence('2'), 'k', 'stale')).rejects.toThrow(
        StaleFencingTokenError,
      );
      expect(await redis.get(`${appPrefix}k`)).toBe('v');
      expect(await redis.exists('k', 'fenced:rp')).toBe(0);
      expect(await redis.exists(`${appPrefix}fenced:rp`)).toBe(1);
      expect(await own.highest('rp')).toBe('3');
    } finally {
      await closeAll([prefixed]);
    }
  });

  it('offers SET, HSET, INCRBY and DEL, and runs command lists in order', async () => {
    const fence = { resource: 'r3', token: '1' };
    const h = `${prefix}h`;
    expect(await store.hset(fence, h, { status: 'paid', qty: 2 })).toBe(2);
    expect(await redis.hgetall(h)).toEqual({ status: 'paid', qty: '2' });
    expect(await store.incrby(fence, `${prefix}c`, 5)).toBe(5);
    expect(await store.incrby(fence, `${prefix}c`, -2)).toBe(3);
    expect(
      await store.exec(fence, [
        ['RPUSH', `${prefix}l`, 'a', 'b'],
        ['GET', `${prefix}missing`],
        ['LLEN', `${prefix}l`],
      ]),
    ).toEqual([2, null, 2]);
    expect(await store.del(fence, h, `${prefix}c`, `${prefix}none`)).toBe(2);
  });

  it('takes a fenced lock directly, and fenceOf() picks a resource of a multi-resource lock', async () => {
    const lock = await redlock.acquire('sku:1');
    await store.set(lock, `${prefix}sku:1`, 'x');
    expect(await store.highest('sku:1')).toBe(lock.fencingToken);
    await lock.release();
    const multi = await redlock.acquire(['sku:1', 'sku:2']);
    await expect(store.set(multi, `${prefix}sku:2`, 'y')).rejects.toThrow(
      expect.objectContaining({ field: 'resource' }),
    );
    await store.set(fenceOf(multi, 'sku:2'), `${prefix}sku:2`, 'y');
    expect(await store.highest('sku:2')).toBe(
      multi.fencingTokens!.get('sku:2'),
    );
    expect(() => fenceOf(multi, 'sku:3')).toThrow(RedlockConfigError);
    await multi.release();
    const plain = await redlock.acquire('sku:1', { fencing: false });
    expect(() => fenceOf(plain)).toThrow(/fencing: true/);
    await plain.release();
  });

  it('validates its arguments, naming the field', async () => {
    const cases: [() => Promise<unknown>, string][] = [
      [() => store.set({ resource: 'r', token: '012' }, 'k', 1), 'fence.token'],
      [
        () =>
          store.set({ resource: 'r', token: 7 as unknown as string }, 'k', 1),
        'fence.token',
      ],
      [() => store.set({ resource: '', token: '1' }, 'k', 1), 'fence.resource'],
      [() => store.exec({ resource: 'r', token: '1' }, []), 'commands'],
      [
        () =>
          store.exec({ resource: 'r', token: '1' }, [
            ['SET', 'k', {} as unknown as string],
          ]),
        'commands[0][2]',
      ],
      [() => store.incrby({ resource: 'r', token: '1' }, 'k', 1.5), 'delta'],
    ];
    for (const [call, field] of cases) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).field).toBe(field);
    }
    expect(await store.highest('r')).toBeNull();
    expect(() => new FencedStore({} as Redis)).toThrow(
      expect.objectContaining({ field: 'client' }),
    );
  });

  it('refuses the write of a holder paused past its lease after a newer holder wrote: the last unit is sold once', async () => {
    const stock = `${prefix}stock:last`;
    const orders = `${prefix}orders:last`;
    await redis.set(stock, 1);
    const sell = async (lock: Lock, seen: number, order: string) =>
      store.exec(lock, [
        ['SET', stock, seen - 1],
        ['RPUSH', orders, order],
      ]);

    const a = await redlock.acquire('stock:last', { ttl: 150 });
    const seenByA = Number(await store.get(a, stock));
    await sleep(250); // A is paused (GC, I/O...) and its lease runs out
    expect(a.isHeld).toBe(false);

    const b = await redlock.acquire('stock:last', { ttl: 2000 });
    expect(BigInt(b.fencingToken!)).toBeGreaterThan(BigInt(a.fencingToken!));
    const seenByB = Number(await store.get(b, stock));
    expect(seenByB).toBe(1);
    await sell(b, seenByB, 'order-b');
    await b.release();

    // A resumes and writes what it decided before the pause.
    expect(seenByA).toBe(1);
    await expect(sell(a, seenByA, 'order-a')).rejects.toThrow(
      StaleFencingTokenError,
    );
    expect(await redis.get(stock)).toBe('0');
    expect(await redis.lrange(orders, 0, -1)).toEqual(['order-b']);
    // The control (the same interleaving through the store without a
    // fenced read sells twice) is the next test's 'unclaimed' run.
  });

  it("refuses a paused holder whose write lands between the new holder's read and write, once the new holder read through the store", async () => {
    const run = async (name: string, fencedRead: boolean) => {
      const stock = `${prefix}stock:${name}`;
      const orders = `${prefix}orders:${name}`;
      await redis.set(stock, 1);
      const a = await redlock.acquire(`stock:${name}`, { ttl: 150 });
      const seenByA = Number(await store.get(a, stock));
      await sleep(250); // A is paused past its lease
      const b = await redlock.acquire(`stock:${name}`, { ttl: 2000 });
      const seenByB = Number(
        fencedRead ? await store.get(b, stock) : await redis.get(stock),
      );
      // A resumes now, before B writes.
      const aWrote = await store
        .exec(a, [
          ['SET', stock, seenByA - 1],
          ['RPUSH', orders, 'order-a'],
        ])
        .then(
          () => true,
          (e: unknown) => {
            if (!(e instanceof StaleFencingTokenError)) throw e;
            return false;
          },
        );
      await store.exec(b, [
        ['SET', stock, seenByB - 1],
        ['RPUSH', orders, 'order-b'],
      ]);
      await b.release();
      return { aWrote, sold: await redis.llen(orders) };
    };
    expect(await run('claimed', true)).toEqual({ aWrote: false, sold: 1 });
    // Control: guarded writes after an unguarded read are not enough.
    expect(await run('unclaimed', false)).toEqual({ aWrote: true, sold: 2 });
  });

  it('never oversells while holders keep getting paused past their leases', async () => {
    const initial = 12;
    const stock = `${prefix}stock:busy`;
    const orders = `${prefix}orders:busy`;
    await redis.set(stock, initial);
    let refused = 0;
    let overlapsSeen = 0;
    let holders = 0;
    const worker = async (w: number) => {
      for (let i = 0; i < 40; i++) {
        const lock = await redlock.acquire('stock:busy', {
          ttl: 100,
          waitTimeout: 5000,
        });
        if (++holders > 1) overlapsSeen++;
        let seen: number;
        try {
          // Read through the store, so a paused older holder that resumes
          // between this read and our write is refused.
          seen = Number(await store.get(lock, stock));
        } catch (error) {
          if (!(error instanceof StaleFencingTokenError)) throw error;
          refused++;
          holders--;
          await lock.release();
          continue;
        }
        // The first round of each worker, and a third of the others, pause
        // past the lease, so another worker takes over meanwhile.
        if (i === 0 || Math.random() < 0.3)
          await sleep(140 + Math.random() * 60);
        holders--;
        try {
          if (seen > 0)
            await store.exec(lock, [
              ['SET', stock, seen - 1],
              ['RPUSH', orders, `${w}:${i}`],
            ]);
        } catch (error) {
          if (!(error instanceof StaleFencingTokenError)) throw error;
          refused++;
        }
        await lock.release();
        if (seen === 0) return;
      }
    };
    await Promise.all([0, 1, 2, 3, 4].map(worker));
    const left = Number(await redis.get(stock));
    const sold = await redis.llen(orders);
    // Pauses past the lease made holders overlap (the lease alone fails)...
    expect(overlapsSeen).toBeGreaterThan(0);
    // ...yet the fence kept the stock exact and refused the stale writes.
    expect(refused).toBeGreaterThan(0);
    expect(left).toBeGreaterThanOrEqual(0);
    expect(sold).toBe(initial - left);
    expect(sold).toBeLessThanOrEqual(initial);
  });
});
