import { afterAll, describe, expect, it } from '@jest/globals';
import {
  LockNotAcquiredError,
  LockShapeError,
  Redlock,
  RedlockConfigError,
  type Lock,
} from 'nestjs-redlock';
import { inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';
import { closeAll, flushed, settledTo } from '../utils/nodes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A counting semaphore (`permits`) on the three quorum nodes: at most
// `permits` holders at once across instances (each one a process of its
// own, as far as the lock can tell), a permit freed in the process wakes a
// waiter, and a resource keeps one shape.
describe('semaphore (permits) on real nodes', () => {
  const keyPrefix = uniquePrefix('sem');
  const admin = inspect(quorumUrls());
  const redlocks: Redlock[] = [];
  const make = () => {
    const r = new Redlock({ clients: quorumUrls(), keyPrefix });
    redlocks.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });

  it('never lets more than `permits` callers of three instances hold the resource, and uses them all', async () => {
    const instances = [make(), make(), make()];
    let inside = 0;
    let most = 0;
    let done = 0;
    const work = async (r: Redlock) => {
      for (let i = 0; i < 8; i++) {
        await r.using(
          'psp',
          async () => {
            inside++;
            most = Math.max(most, inside);
            await new Promise((resolve) => setTimeout(resolve, 5));
            inside--;
            done++;
          },
          { permits: 3, waitTimeout: 20_000, retryDelay: 10, retryJitter: 10 },
        );
      }
    };
    await Promise.all(
      instances.flatMap((r) => Array.from({ length: 4 }, () => work(r))),
    );
    expect(done).toBe(96);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBe(3);
  });

  it('holds one slot key per permit, named after the resource, and leaves none after release', async () => {
    const r = make();
    const locks = await Promise.all(
      [0, 1].map(() => r.acquire('slots', { permits: 2 })),
    );
    const names = locks.flatMap((l) => l.resources).sort();
    expect(names).toEqual(['slots#permit-0', 'slots#permit-1']);
    // The resource's key marks it a semaphore of 2 while permits live, on
    // every node once each has answered (an acquire settles at a quorum).
    const onNodes = () =>
      Promise.all(
        admin.map(async (c) => [
          ...(await c.keys(`${keyPrefix}slots*`)).sort(),
          await c.get(`${keyPrefix}slots`),
        ]),
      );
    const marked = [
      `${keyPrefix}slots`,
      `${keyPrefix}slots#permit-0`,
      `${keyPrefix}slots#permit-1`,
      '~permits:2',
    ];
    expect(
      await settledTo(
        onNodes,
        admin.map(() => marked),
      ),
    ).toEqual(admin.map(() => marked));
    // Every permit held: a third caller is refused without waiting.
    expect(await r.tryAcquire('slots', { permits: 2 })).toBeNull();
    await Promise.all(locks.map((l) => l.release()));
    expect(
      await settledTo(
        onNodes,
        admin.map(() => [null]),
      ),
    ).toEqual(admin.map(() => [null]));
  });

  it("keeps the mark past every holder's lease, and drops it with the last holder's release", async () => {
    const metaPrefix = uniquePrefix('sem-meta');
    const r = new Redlock({ clients: quorumUrls(), keyPrefix, metaPrefix });
    redlocks.push(r);
    const first = await r.acquire('outlived', { permits: 3, ttl: 2000 });
    const second = await r.acquire('outlived', { permits: 3, ttl: 4000 });
    await flushed(r);
    const holders = `${metaPrefix}ph:${keyPrefix}outlived`;
    // On every node holding them: the mark and the holders outlive each
    // holder's entry (the longer lease came second).
    const left = await Promise.all(
      admin.map(async (c) => {
        const [[, a], [, b], [, time], [, mark], [, set]] = (await c
          .multi()
          .zscore(holders, first.value)
          .zscore(holders, second.value)
          .time()
          .pttl(`${keyPrefix}outlived`)
          .pttl(holders)
          .exec()) as [unknown, unknown][];
        const [s, us] = time as [string, string];
        const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
        if (a === null || b === null) return undefined;
        return {
          last: Math.max(Number(a), Number(b)) - now,
          mark: Number(mark),
          set: Number(set),
        };
      }),
    );
    const holding = left.filter((node) => node !== undefined);
    expect(holding.length).toBeGreaterThan(admin.length / 2);
    for (const node of holding) {
      expect(node.last).toBeGreaterThan(2000);
      expect(node.mark).toBeGreaterThanOrEqual(node.last);
      expect(node.set).toBeGreaterThanOrEqual(node.last);
    }
    await second.release();
    // One holder left: the mark stays.
    const marks = () =>
      Promise.all(admin.map((c) => c.get(`${keyPrefix}outlived`)));
    expect(
      (await marks()).filter((m) => m === '~permits:3').length,
    ).toBeGreaterThan(admin.length / 2);
    await first.release();
    const none = admin.map(() => null);
    expect(await settledTo(marks, none)).toEqual(none);
  });

  it('gives up at waitTimeout naming the resource asked for, busy, with the lease left', async () => {
    const holder = make();
    const other = make();
    const held = await holder.acquire('full', { permits: 1, ttl: 10_000 });
    const error = await other
      .acquire('full', { permits: 1, waitTimeout: 150, nodeTimeout: 2000 })
      .catch((e: unknown) => e);
    await held.release();
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error).toMatchObject({ resources: ['full'], reason: 'busy' });
    expect((error as LockNotAcquiredError).retryAfter).toBeGreaterThan(5000);
    const left = () =>
      Promise.all(admin.map((c) => c.keys(`${keyPrefix}full*`)));
    expect(
      await settledTo(
        left,
        admin.map(() => []),
      ),
    ).toEqual(admin.map(() => []));
  });

  it('wakes a waiter of the process when a permit is released there, long before its poll', async () => {
    const r = make();
    const held = await r.acquire('wake', { permits: 1 });
    const started = performance.now();
    const waiting = r.acquire('wake', {
      permits: 1,
      retryDelay: 5000,
      retryJitter: 0,
      waitTimeout: 10_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await held.release();
    const lock = await waiting;
    expect(performance.now() - started).toBeLessThan(4000);
    await lock.release();
  });

  it('refuses another shape for a resource in use in this process, naming both', async () => {
    const r = make();
    const held = await r.acquire('shape', { permits: 4 });
    await expect(r.acquire('shape', { permits: 2 })).rejects.toThrow(
      LockShapeError,
    );
    await expect(r.acquire('shape', { permits: 2 })).rejects.toThrow(
      /"shape" as a semaphore of 2 permits: it is held or acquired as a semaphore of 4 permits/,
    );
    await expect(r.tryAcquire('shape')).rejects.toThrow(
      /as a mutex: it is held or acquired as a semaphore of 4 permits/,
    );
    await held.release();
    // Once free in this process, any shape may be used.
    const mutex = await r.acquire('shape');
    await expect(r.acquire('shape', { permits: 2 })).rejects.toThrow(
      /as a semaphore of 2 permits: it is held or acquired as a mutex/,
    );
    await mutex.release();
  });

  it('refuses a permit count that is not an integer from 1 to 1024, naming the field', async () => {
    const r = make();
    for (const permits of [0, 1.5, 1025, '3', -1])
      await expect(
        r.acquire('bad', { permits: permits as number }),
      ).rejects.toThrow(RedlockConfigError);
    await expect(r.acquire('bad', { permits: 0 })).rejects.toThrow(
      /options\.permits.*must be an integer from 1 to 1024, got 0/,
    );
  });

  it('takes one permit of each resource, all or nothing', async () => {
    const r = make();
    const other = make();
    const a = await other.acquire('multi-a', { permits: 1 });
    // multi-b has a free permit, multi-a none: nothing is taken.
    expect(
      await r.tryAcquire(['multi-a', 'multi-b'], { permits: 1 }),
    ).toBeNull();
    for (const client of admin)
      expect(await client.keys(`${keyPrefix}multi-b*`)).toEqual([]);
    await a.release();
    const both: Lock = await r.acquire(['multi-a', 'multi-b'], {
      permits: 1,
    });
    expect([...both.resources].sort()).toEqual([
      'multi-a#permit-0',
      'multi-b#permit-0',
    ]);
    await both.release();
  });

  it('gives each permit fencing tokens that grow with each holder of it', async () => {
    const r = make();
    const first = await r.acquire('fenced', { permits: 1, fencing: true });
    const t1 = BigInt(first.fencingToken!);
    await first.release();
    const second = await r.acquire('fenced', { permits: 1, fencing: true });
    expect(BigInt(second.fencingToken!)).toBeGreaterThan(t1);
    await second.release();
  });

  it('refuses another shape held by another process, as the nodes report it, and blocks a mutex there', async () => {
    const a = make();
    const b = make();
    const counts = () =>
      Promise.all(
        admin.map(
          async (c) => (await c.keys(`${keyPrefix}remote-shape*`)).length,
        ),
      );
    const held = await a.acquire('remote-shape', { permits: 4 });
    // Held once a quorum took it; a node still connecting (a fresh
    // instance) gets the mark later, so wait for every node before b comes
    // (or b's mutex could take that node first). A node the acquire never
    // reached (seen once on a loaded machine) keeps none: a quorum has
    // the mark and the permit.
    const before = await settledTo(
      counts,
      admin.map(() => 2),
    );
    const quorum = Math.floor(admin.length / 2) + 1;
    expect(before.filter((n) => n === 2).length).toBeGreaterThanOrEqual(quorum);
    expect(before.every((n) => n === 2 || n === 0)).toBe(true);
    const other = await b
      .acquire('remote-shape', { permits: 2, waitTimeout: 2000 })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(LockShapeError);
    expect((other as LockShapeError).message).toMatch(
      /"remote-shape" as a semaphore of 2 permits: it is held or acquired as a semaphore of 4 permits by another process/,
    );
    await expect(b.acquire('remote-shape', { mode: 'read' })).rejects.toThrow(
      /as a read\/write lock: .* a semaphore of 4 permits by another process/,
    );
    // A mutex elsewhere meets the mark as it meets any holder.
    expect(await b.tryAcquire('remote-shape')).toBeNull();
    // No key of the refused calls is left behind, none of a's is gone.
    await flushed(a);
    await flushed(b);
    expect(await settledTo(counts, before)).toEqual(before);
    await held.release();
    // The mark goes with the last permit: any shape may be used again.
    expect(
      await settledTo(
        counts,
        admin.map(() => 0),
      ),
    ).toEqual(admin.map(() => 0));
    const mutex = await b.acquire('remote-shape');
    await expect(
      a.acquire('remote-shape', { permits: 4, waitTimeout: 0 }),
    ).rejects.toThrow(
      /held or acquired as a mutex or a read\/write lock's writer by another process/,
    );
    await mutex.release();
  });

  it("gives up at once with the signal's reason when the caller aborts while it waits", async () => {
    const r = make();
    const held = await make().acquire('aborted', { permits: 1 });
    const controller = new AbortController();
    const waiting = r
      .acquire('aborted', {
        permits: 1,
        waitTimeout: 10_000,
        retryDelay: 5000,
        retryJitter: 0,
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    await sleep(50);
    const reason = new Error('caller gone');
    const started = performance.now();
    controller.abort(reason);
    expect(await waiting).toBe(reason);
    expect(performance.now() - started).toBeLessThan(1000);
    await held.release();
  });
});
