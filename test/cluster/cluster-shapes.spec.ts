import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from 'ioredis';
import { Redlock, type RedlockOptions } from 'nestjs-redlock';
import {
  startCluster,
  type RedisCluster,
} from '../../scripts/redis-clusters.mjs';
import { settledTo, uniquePrefix } from '../utils/nodes.js';

/**
 * Semaphores (`permits`) and read/write locks (`mode`) with a Redis
 * Cluster as the node: the bounds hold, every key of a resource (its
 * mark, permit slots, holders, readers, writer intent) is in the
 * resource's hash slot, inspect() reads them, and quit() leaves none of
 * them behind.
 */
describe('semaphores and read/write locks on a Redis Cluster node', () => {
  let cluster: RedisCluster;
  let admin: Cluster;
  const redlocks: Redlock[] = [];
  const make = (options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      clients: [{ cluster: cluster.seeds }],
      keyPrefix: uniquePrefix('cl-shape'),
      logger: { warn: () => undefined },
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    admin = cluster.client();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    admin?.disconnect();
    await cluster?.stop();
  });

  it('keeps a semaphore’s bound over two instances, every key of the resource in its slot', async () => {
    const keyPrefix = uniquePrefix('sem');
    const instances = [make({ keyPrefix }), make({ keyPrefix })];
    let inside = 0;
    let most = 0;
    const work = async (r: Redlock) => {
      for (let i = 0; i < 6; i++)
        await r.using(
          'psp',
          async () => {
            inside++;
            most = Math.max(most, inside);
            await sleep(5);
            inside--;
          },
          { permits: 3, waitTimeout: 20_000, retryDelay: 10, retryJitter: 10 },
        );
    };
    await Promise.all(
      instances.flatMap((r) => Array.from({ length: 4 }, () => work(r))),
    );
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBe(3);
    // The keys where docs/cluster.md says: lock:{psp}#permit-<i>, all
    // in the slot of {psp}, as the mark lock:{psp} and the holders.
    const locks = await Promise.all(
      [0, 1, 2].map(() => instances[0].acquire('psp', { permits: 3 })),
    );
    const key = `${keyPrefix}{psp}`;
    const keys = [0, 1, 2].map((i) => `${key}#permit-${i}`);
    expect(locks.flatMap((l) => l.keys).sort()).toEqual(keys);
    const metaKeys = await (
      await cluster.masterOf(key)
    )
      .admin()
      .keys(`*${key}*`);
    // Besides, a waiter's wake list may still lapse (redlock:sw:…).
    expect(metaKeys.filter((k) => !k.startsWith('redlock:sw:')).sort()).toEqual(
      [...keys, key, `redlock:ph:${key}`].sort(),
    );
    const slots = new Set(
      await Promise.all(metaKeys.map((k) => cluster.slotOf(k))),
    );
    expect([...slots]).toEqual([await cluster.slotOf('{psp}')]);
    const seen = await instances[1].inspect('psp', { permits: 3 });
    expect(seen).toMatchObject({ key, inUse: 3, held: 3, heldHere: 0 });
    expect(seen.slots.map((s) => s.nodes[0].holder)).toEqual([
      'other',
      'other',
      'other',
    ]);
    expect(seen.nodes[0]).toMatchObject({ up: true, permits: 3, holders: 3 });
    await Promise.all(locks.map((l) => l.release()));
    // A release this process's callers may still take back lingers until
    // the event loop turns (`deferred`), then goes to the node.
    expect(
      await settledTo(() => admin.exists(...keys, key, `redlock:ph:${key}`), 0),
    ).toBe(0);
  }, 60_000);

  it('wakes a reader of another instance when the writer releases, through the resource’s shard', async () => {
    const keyPrefix = uniquePrefix('wake');
    const [a, b] = [make({ keyPrefix }), make({ keyPrefix })];
    // A lease and a poll longer than the test: only a wake-up ends the wait.
    const held = await a.acquire('doc', { mode: 'write', ttl: 60_000 });
    const retries = b.stats.retries;
    const asked = b.acquire('doc', {
      mode: 'read',
      waitTimeout: 30_000,
      retryDelay: 20_000,
      retryJitter: 0,
    });
    const until = performance.now() + 10_000;
    while (b.stats.retries === retries && performance.now() < until)
      await sleep(2);
    // Refused and waiting (its shard subscription, once live, may wake it
    // for one more refused attempt: a release before it would be lost).
    expect(b.stats.retries).toBeGreaterThanOrEqual(retries + 1);
    const key = `${keyPrefix}{doc}`;
    expect(await admin.scard(`redlock:sw:${key}`)).toBe(1);
    await held.release();
    const lock = await Promise.race([asked, sleep(10_000, 'slept' as const)]);
    expect(lock).not.toBe('slept');
    if (lock !== 'slept') await lock.release();
  });

  it('keeps readers together and a writer alone, the readers, intent and key in the resource’s slot; inspect() reads them', async () => {
    const keyPrefix = uniquePrefix('rw');
    const [a, b] = [make({ keyPrefix }), make({ keyPrefix })];
    const key = `${keyPrefix}{doc}`;
    const readers = await Promise.all([
      a.acquire('doc', { mode: 'read', ttl: 10_000 }),
      b.acquire('doc', { mode: 'read', ttl: 10_000 }),
    ]);
    expect(await a.tryAcquire('doc', { mode: 'write' })).toBeNull();
    const writing = a.acquire('doc', {
      mode: 'write',
      waitTimeout: 10_000,
      retryDelay: 20,
      retryJitter: 0,
    });
    await sleep(100);
    const keys = await (await cluster.masterOf(key)).admin().keys(`*${key}*`);
    // The waiting writer's entry on the wake list too.
    expect(keys.sort()).toEqual(
      [
        key,
        `redlock:rd:${key}`,
        `redlock:wi:${key}`,
        `redlock:sw:${key}`,
      ].sort(),
    );
    const slots = new Set(
      await Promise.all(keys.map((k) => cluster.slotOf(k))),
    );
    expect([...slots]).toEqual([await cluster.slotOf('{doc}')]);
    expect(await b.inspect('doc', { mode: 'read' })).toMatchObject({
      key,
      mode: 'read',
      readers: 2,
      readersHere: 1,
      writerWaiting: 'other',
    });
    await Promise.all(readers.map((r) => r.release()));
    const writer = await writing;
    expect(await b.inspect('doc', { mode: 'write' })).toMatchObject({
      mode: 'write',
      writer: 'other',
      readers: 0,
    });
    await writer.release();
    expect(await admin.exists(...keys)).toBe(0);
  }, 30_000);

  it('puts the permit slots of a tagged resource in the tag’s slot', async () => {
    const r = make();
    const lock = await r.acquire('{tenant:7}:exports', { permits: 2 });
    const other = await r.acquire('{tenant:7}:exports', { permits: 2 });
    const keys = [lock, other].map((l) => l.keys[0]);
    const slots = await Promise.all(keys.map((k) => cluster.slotOf(k)));
    expect(slots[0]).toBe(slots[1]);
    expect(slots[0]).toBe(await cluster.slotOf('{tenant:7}'));
    await Promise.all([lock.release(), other.release()]);
  });

  it('releases held permits and read locks at quit(): no key left', async () => {
    const keyPrefix = uniquePrefix('quit');
    const r = make({ keyPrefix });
    await r.ready();
    await r.acquire('jobs', { permits: 4, ttl: 30_000 });
    await r.acquire('jobs', { permits: 4, ttl: 30_000 });
    await r.acquire('catalogue', { mode: 'read', ttl: 30_000 });
    expect((await r.inspect('jobs', { permits: 4 })).held).toBe(2);
    expect((await r.inspect('catalogue', { mode: 'read' })).readers).toBe(1);
    await r.quit();
    for (const tag of ['{jobs}', '{catalogue}']) {
      const key = `${keyPrefix}${tag}`;
      expect(
        await (await cluster.masterOf(key)).admin().keys(`*${key}*`),
      ).toEqual([]);
    }
  });
});
