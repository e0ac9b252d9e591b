import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Redis } from 'ioredis';
import { Redlock } from 'nestjs-redlock';
import {
  scanKeys,
  startServers,
  type RedisServer,
} from '../../scripts/redis-nodes.mjs';
import {
  closeAll,
  flushed,
  scriptCalls,
  startListening,
  uniquePrefix,
} from '../utils/nodes.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

// What is left after many locks (heap, subscriptions, keys, per-resource
// state) and what the watchdog sends per tick. The watchdog's behaviour:
// test/correctness/state-and-watchdog.spec.ts.
describe('no per-resource state outlives its lock; batched watchdog', () => {
  let servers: RedisServer[];
  let admin: Redis[];
  let redlock: Redlock;
  let other: Redlock;
  const prefix = uniquePrefix('mem');

  beforeAll(async () => {
    servers = await startServers(3);
    admin = servers.map((s) => s.client());
    redlock = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: prefix,
    });
    other = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: prefix,
    });
  });
  afterAll(async () => {
    await redlock.quit();
    await other.quit();
    await closeAll(admin);
    await Promise.all(servers.map((s) => s.stop()));
  });

  const subscriptions = async () => {
    let count = 0;
    for (const client of admin) {
      const list = (await client.call(
        'CLIENT',
        'LIST',
        'TYPE',
        'pubsub',
      )) as string;
      for (const line of list.split('\n'))
        count += Number(/ sub=(\d+)/.exec(line)?.[1] ?? 0);
    }
    return count;
  };

  it('returns heap, subscriptions and Redis keys to where they started after 100,000 distinct resources', async () => {
    // Warm up: both instances wait once so their subscribers (one per
    // node each, for the life of the instance) exist, then measure.
    await startListening(other, redlock);
    await startListening(redlock, other);
    const subsBefore = await subscriptions();
    const heapBefore = await heapAfterGc();

    const total = 100_000;
    const concurrency = 100;
    for (let i = 0; i < total; i += concurrency) {
      await Promise.all(
        Array.from({ length: concurrency }, async (_, j) => {
          const resource = `r:${i + j}`;
          // Every tenth resource is contended: a waiter in this process and one in another.
          if (j % 10 === 0) {
            const held = await redlock.acquire(resource);
            const local = redlock.acquire(resource);
            const remote = other.acquire(resource);
            setTimeout(() => void held.release(), 1);
            await Promise.all(
              [local, remote].map(async (lock) => (await lock).release()),
            );
          } else {
            await redlock.using(resource, () => undefined);
          }
        }),
      );
    }

    // The last contended releases may be held back until the loop turns.
    await Promise.all([flushed(redlock), flushed(other)]);
    expect(redlock.contention.queue.size).toBe(0);
    expect(redlock.contention.listener.size).toBe(0);
    expect(redlock.keepAlive.size).toBe(0);
    expect(other.contention.queue.size).toBe(0);
    expect(await subscriptions()).toBe(subsBefore);
    await new Promise((r) => setTimeout(r, 1600));
    for (const client of admin) {
      expect(await scanKeys(client, `${prefix}*`)).toEqual([]);
      // Wait queues (under the meta prefix) are gone with their waiters: at
      // once where the waiter was granted, else when its place expires
      // (2 x (retryDelay + retryJitter + nodeTimeout) + 250 ms = 650 ms here).
      expect(await scanKeys(client, `redlock:*${prefix}*`)).toEqual([]);
    }
    const grown = (await heapAfterGc()) - heapBefore;
    // 100,000 resources with a retained object each would be over 10 MB.
    expect(grown).toBeLessThan(3 * 1024 * 1024);
  }, 120_000);

  it('keeps 2,000 locks alive with one pipeline per node per tick', async () => {
    // Leases a starved process still renews in time (a tick every third of
    // one), over two and a half of them.
    const ttl = 3000;
    const count = 2000;
    const holdMs = 7500;
    let release!: () => void;
    const until = new Promise<void>((r) => (release = r));
    const ticksBefore = redlock.keepAlive.ticks;
    const lost: string[] = [];
    const holds: Promise<unknown>[] = [];
    let acquired = 0;
    for (let i = 0; i < count; i++) {
      holds.push(
        redlock.using(
          `held:${i}`,
          async (lock) => {
            acquired++;
            await until;
            if (lock.signal.aborted) lost.push(lock.resources[0]);
          },
          { ttl, onLockLost: 'ignore' },
        ),
      );
    }
    while (acquired < count) await new Promise((r) => setTimeout(r, 10));
    const before = await scriptCalls(admin);
    await new Promise((r) => setTimeout(r, holdMs));
    const during = (await scriptCalls(admin)) - before;
    const ticks = redlock.keepAlive.ticks - ticksBefore;
    // Every key still there, well past three leases.
    for (const client of admin) {
      const pttls = await Promise.all(
        [0, 999, 1999].map((i) => client.pttl(`${prefix}held:${i}`)),
      );
      for (const pttl of pttls) expect(pttl).toBeGreaterThan(0);
    }
    release();
    await Promise.all(holds);
    expect(lost).toEqual([]);
    // A tick every sixth to third of the lease.
    expect(ticks).toBeGreaterThanOrEqual(holdMs / (ttl / 3) - 1);
    expect(ticks).toBeLessThanOrEqual(holdMs / (ttl / 6) + 4);
    // Per node per tick: one pipeline of ceil(2000 / 500) = 4 script calls,
    // not 2000 commands.
    expect(during).toBeLessThanOrEqual((ticks + 2) * 4 * admin.length);
    expect(redlock.keepAlive.size).toBe(0);
  }, 60_000);
});
