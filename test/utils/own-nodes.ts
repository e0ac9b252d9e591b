import { afterAll, beforeAll } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Redlock, type RedlockOptions } from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { closeAll } from './nodes.js';

/**
 * Redis servers of one spec, for tests that inject faults or count commands
 * per node (shared servers would mix other specs' traffic in): `count`
 * servers started before the spec's tests, a plain client on each
 * (`admin`), and `make()` for `Redlock` instances on them. All are closed
 * after the spec. The arrays are filled in place, so a spec may
 * destructure them at once.
 */
export function ownNodes(count: number): {
  servers: RedisServer[];
  admin: Redis[];
  make: (options?: Partial<RedlockOptions>) => Redlock;
} {
  const servers: RedisServer[] = [];
  const admin: Redis[] = [];
  const redlocks: Redlock[] = [];
  beforeAll(async () => {
    servers.push(...(await startServers(count)));
    admin.push(...servers.map((s) => s.client()));
  });
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
    await Promise.all(servers.map((s) => s.stop()));
  });
  const make = (options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      clients: servers.map((s) => s.url),
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };
  return { servers, admin, make };
}
