import { afterAll, beforeAll } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Redlock, type RedlockOptions } from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { closeAll } from './nodes.js';

/**
 * Options for instances of specs that count script calls per node: a node
 * timeout well above the default (100 ms), since a node slower than that
 * on a loaded machine makes an attempt or a release add clean-up calls.
 */
export const COUNTING: Partial<RedlockOptions> = { nodeTimeout: 1000 };

/**
 * Redis servers of one spec, for tests that inject faults or count commands
 * per node (shared servers would mix other specs' traffic in): `count`
 * servers started before the spec's tests, a plain client on each
 * (`admin`), and `make()` for `Redlock` instances on them (`prefixed()`:
 * with that key prefix), each with `defaults` unless overridden. All are
 * closed after the spec. The arrays are filled in place, so a spec may
 * destructure them at once.
 */
export function ownNodes(
  count: number,
  defaults: Partial<RedlockOptions> = {},
): {
  servers: RedisServer[];
  admin: Redis[];
  make: (options?: Partial<RedlockOptions>) => Redlock;
  prefixed: (prefix: string, options?: Partial<RedlockOptions>) => Redlock;
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
      ...defaults,
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };
  const prefixed = (prefix: string, options: Partial<RedlockOptions> = {}) =>
    make({ keyPrefix: prefix, ...options });
  return { servers, admin, make, prefixed };
}
