import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from 'ioredis';
import { Locked, LockService, RedlockModule } from 'nestjs-redlock';
import {
  startCluster,
  type RedisCluster,
} from '../../scripts/redis-clusters.mjs';
import { uniquePrefix } from '../utils/nodes.js';

const keyPrefix = uniquePrefix('nest-cl');
let store: Cluster;

@Injectable()
class StockService {
  /** Read, check, write: oversells when two calls interleave. */
  @Locked('sku:<sku>', { waitTimeout: 20_000 })
  async sell(sku: string): Promise<boolean> {
    const key = `${keyPrefix}stock:{${sku}}`;
    const left = Number(await store.get(key));
    await sleep(2);
    if (left <= 0) return false;
    await store.set(key, left - 1);
    return true;
  }
}

/** The Nest path on a Cluster node: the module from seed URLs, `@Locked`, `LockService`, shutdown. */
describe('RedlockModule with a Redis Cluster node', () => {
  let cluster: RedisCluster;
  const apps: INestApplication[] = [];
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    store = cluster.client();
    for (let i = 0; i < 2; i++) {
      const ref = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({
            clients: [{ cluster: cluster.seeds }],
            keyPrefix,
          }),
        ],
        providers: [StockService],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    store?.disconnect();
    await cluster?.stop();
  });

  it('sells 20 units to 40 buyers over two app instances, no more', async () => {
    await store.set(`${keyPrefix}stock:{A1}`, 20);
    const sold = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        apps[i % 2].get(StockService).sell('A1'),
      ),
    );
    expect(sold.filter(Boolean)).toHaveLength(20);
    expect(await store.get(`${keyPrefix}stock:{A1}`)).toBe('0');
  }, 30_000);

  it('reports the cluster in health(), and releases what it holds at shutdown', async () => {
    const locks = apps[0].get(LockService);
    const health = await locks.health();
    expect(health.healthy).toBe(true);
    expect(health.nodes[0].shards).toHaveLength(3);
    const lock = await locks.acquire('order:7', { ttl: 30_000 });
    const key = `${keyPrefix}{order:7}`;
    expect(await store.get(key)).toBe(lock.value);
    await apps[0].close();
    apps.shift();
    expect(await store.exists(key)).toBe(0);
  });
});
