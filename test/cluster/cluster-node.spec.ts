import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from 'ioredis';
import {
  LockNotAcquiredError,
  Redlock,
  REDLOCK_CHANNELS,
  type RedlockOptions,
} from 'nestjs-redlock';
import {
  startCluster,
  type RedisCluster,
} from '../../scripts/redis-clusters.mjs';
import { SLOW_RETRY, uniquePrefix } from '../utils/nodes.js';

/**
 * One Redis Cluster (3 masters, 1 replica each) as the only node of the
 * quorum: what a single server does, a cluster must do too, with each
 * resource's keys in its own slot and multi-resource locks across slots.
 */
describe('a Redis Cluster as a node', () => {
  let cluster: RedisCluster;
  let admin: Cluster;
  const redlocks: Redlock[] = [];
  const make = (options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      clients: [{ cluster: cluster.seeds }],
      keyPrefix: uniquePrefix('cl'),
      logger: { warn: () => undefined },
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
    admin = cluster.client();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    admin?.disconnect();
    await cluster?.stop();
  });

  it('keeps 40 read-check-write callers of two replicas from overlapping; without the lock they oversell', async () => {
    const keyPrefix = uniquePrefix('stock');
    const replicas = [make({ keyPrefix }), make({ keyPrefix })];
    const stock = `${keyPrefix}stock:{sku-1}`;
    const sell = async () => {
      const left = Number(await admin.get(stock));
      await sleep(2); // between the check and the write
      if (left > 0) await admin.set(stock, left - 1);
      return left > 0;
    };
    await admin.set(stock, 20);
    const locked = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        replicas[i % 2].using('sku-1', sell, { waitTimeout: 20_000 }),
      ),
    );
    expect(locked.filter(Boolean)).toHaveLength(20);
    expect(await admin.get(stock)).toBe('0');
    await admin.set(stock, 20);
    const unlocked = await Promise.all(Array.from({ length: 40 }, sell));
    expect(unlocked.filter(Boolean).length).toBeGreaterThan(20);
  }, 60_000);

  it('takes resources of several slots all or nothing: a slot that refuses leaves no key in the others', async () => {
    const keyPrefix = uniquePrefix('multi');
    const [a, b] = [make({ keyPrefix }), make({ keyPrefix })];
    const resources = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
    const keys = resources.map((r) => a.keyOf(r));
    const slots = new Set(
      await Promise.all(keys.map((k) => cluster.slotOf(k))),
    );
    const owners = new Set(
      (await Promise.all(keys.map((k) => cluster.masterOf(k)))).map(
        (m) => m.port,
      ),
    );
    expect(slots.size).toBe(6);
    expect(owners.size).toBeGreaterThan(1);
    const held = await a.acquire('r4', { ttl: 10_000 });
    const refused = await b
      .acquire(resources, { ttl: 10_000, waitTimeout: 0 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    const left = await Promise.all(keys.map((k) => admin.get(k)));
    expect(left.filter((v) => v !== null)).toEqual([held.value]);
    await held.release();
    const all = await b.acquire(resources, { ttl: 10_000 });
    expect(await Promise.all(keys.map((k) => admin.get(k)))).toEqual(
      keys.map(() => all.value),
    );
    await all.extend(20_000);
    const ttls = await Promise.all(keys.map((k) => admin.pttl(k)));
    expect(Math.min(...ttls)).toBeGreaterThan(10_000);
    expect((await all.release()).released).toBe(true);
    expect(await Promise.all(keys.map((k) => admin.exists(k)))).toEqual(
      keys.map(() => 0),
    );
  });

  it('wakes a waiter through sharded pub/sub on the key’s shard, and its keys share the slot', async () => {
    const keyPrefix = uniquePrefix('wake');
    const [holder, waiter] = [make({ keyPrefix }), make({ keyPrefix })];
    for (const resource of ['plain', 'with{brace}', '}odd{', '{}']) {
      const key = holder.keyOf(resource);
      const owner = await cluster.masterOf(key);
      const held = await holder.acquire(resource, { ttl: 10_000 });
      const start = performance.now();
      const waiting = waiter.acquire(resource, SLOW_RETRY);
      // The waiter's queue keys and channel live on the key's shard.
      let channels: string[] = [];
      for (let i = 0; i < 50 && !channels.length; i++) {
        await sleep(20);
        channels = (await owner
          .admin()
          .call('PUBSUB', 'SHARDCHANNELS', `*${key}`)) as string[];
      }
      expect(channels).toHaveLength(1);
      const queue = await owner.admin().keys(`*q:${key}`);
      expect(queue).toHaveLength(1);
      const wakeups = waiter.contention.listener.wakeups;
      await held.release();
      const lock = await waiting;
      // Woken by the message, not by its 5 s fallback retry.
      expect(performance.now() - start).toBeLessThan(3000);
      expect(waiter.contention.listener.wakeups).toBeGreaterThan(wakeups);
      await lock.release();
    }
  }, 30_000);

  it('issues increasing fencing tokens, and inspect, health and events see the cluster', async () => {
    const redlock = make({ fencing: true });
    const events: unknown[] = [];
    const onAttempt = (m: unknown) => events.push(m);
    subscribe(REDLOCK_CHANNELS.attempt, onAttempt);
    try {
      const first = await redlock.acquire(['f1', 'f2', 'f3'], { ttl: 5000 });
      const seen = await redlock.inspect('f2');
      expect(seen.held).toBe(true);
      expect(seen.holder).toBe('this-instance');
      expect(seen.nodes[0].fencingToken).toBe(first.fencingTokens?.get('f2'));
      await first.release();
      const second = await redlock.acquire(['f1', 'f2', 'f3'], { ttl: 5000 });
      for (const r of ['f1', 'f2', 'f3'])
        expect(
          BigInt(second.fencingTokens?.get(r) ?? 0) >
            BigInt(first.fencingTokens?.get(r) ?? 0),
        ).toBe(true);
      await second.release();
    } finally {
      unsubscribe(REDLOCK_CHANNELS.attempt, onAttempt);
    }
    expect(events.length).toBeGreaterThanOrEqual(2);
    const health = await redlock.health();
    expect(health.healthy).toBe(true);
    expect(health.nodes[0].shards).toHaveLength(3);
  });

  it('finds two entries that are one cluster (other seeds), as one server listed twice', async () => {
    const warnings: string[] = [];
    const twice = make({
      clients: [
        { cluster: [cluster.seeds[0]] },
        { cluster: [cluster.seeds[1]] },
        { cluster: [cluster.seeds[2]] },
      ],
      logger: { warn: (m) => warnings.push(m) },
    });
    await twice.ready();
    for (let i = 0; i < 50 && !warnings.length; i++) await sleep(20);
    expect(warnings.join('\n')).toMatch(
      /clients\[1\] \(cluster:127\.0\.0\.1:\d+\) is the same Redis server as clients\[0\]/,
    );
  });

  it('keeps a watched lock alive past its ttl, extending across slots and shards', async () => {
    const redlock = make();
    const keys = ['w1', 'w2', 'w3', 'w4'].map((r) => redlock.keyOf(r));
    const value = await redlock.using(
      ['w1', 'w2', 'w3', 'w4'],
      async (lock) => {
        await sleep(1500);
        const held = await Promise.all(keys.map((k) => admin.get(k)));
        expect(held).toEqual(keys.map(() => lock.value));
        return lock.value;
      },
      { ttl: 600 },
    );
    expect(value).toEqual(expect.any(String));
    // Released, not expired: every master has answered a PING sent after
    // the release on the same connection (a release settles once a quorum
    // confirmed; on a busy machine a shard's delete may still be queued).
    await Promise.all(redlock.nodes.map((n) => n.ping()));
    expect(await Promise.all(keys.map((k) => admin.exists(k)))).toEqual([
      0, 0, 0, 0,
    ]);
  }, 15_000);
});
