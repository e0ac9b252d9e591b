import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Redlock } from 'nestjs-redlock';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

describe('mutual exclusion on five nodes', () => {
  const prefix = uniquePrefix('mutex');
  // Five instances with their own connections stand for five replicas.
  let replicas: Redlock[];
  let store: Redis[];

  beforeAll(() => {
    replicas = Array.from(
      { length: 5 },
      () =>
        new Redlock({ clients: quorumUrls(), keyPrefix: prefix, ttl: 5000 }),
    );
    store = inspect(quorumUrls().slice(0, 1));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.quit()));
    await closeAll(store);
  });

  it('50 concurrent read-modify-write callers never overlap and lose no update', async () => {
    const counter = `${prefix}counter`;
    await store[0].set(counter, 0);
    let inside = 0;
    let maxInside = 0;
    const callers = Array.from({ length: 50 }, (_, i) =>
      replicas[i % replicas.length].using(
        'counter',
        async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          const value = Number(await store[0].get(counter));
          await new Promise((r) => setTimeout(r, 2)); // the gap between check and write
          await store[0].set(counter, value + 1);
          inside--;
        },
        { waitTimeout: 20_000, retryDelay: 5, retryJitter: 10 },
      ),
    );
    await Promise.all(callers);
    expect(maxInside).toBe(1);
    expect(Number(await store[0].get(counter))).toBe(50);
  });

  it('the same read-modify-write without the lock does lose updates (the checker can fail)', async () => {
    const counter = `${prefix}unlocked`;
    await store[0].set(counter, 0);
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const value = Number(await store[0].get(counter));
        await new Promise((r) => setTimeout(r, 2));
        await store[0].set(counter, value + 1);
      }),
    );
    expect(Number(await store[0].get(counter))).toBeLessThan(50);
  });
});
