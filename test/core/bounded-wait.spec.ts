import {
  afterAll,
  afterEach,
  beforeAll,
  describe,
  expect,
  it,
} from '@jest/globals';
import { LockNotAcquiredError, Redlock } from 'nestjs-redlock';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { uniquePrefix } from '../utils/nodes.js';

// An acquire settles within waitTimeout plus one nodeTimeout (the attempt
// in flight) when a quorum is unreachable: nodes refused (down) or
// answering nothing (frozen, as a blackholed node is). On servers of its
// own, as it stops them.
describe('waitTimeout bounds an acquire with a quorum unreachable (own 3 servers)', () => {
  let servers: RedisServer[];
  const prefix = uniquePrefix('bounded');
  const nodeTimeout = 300;

  beforeAll(async () => {
    servers = await startServers(3);
  });
  afterEach(async () => {
    for (const s of servers) s.thaw();
    await Promise.all(
      servers.filter((s) => s.pid === undefined).map((s) => s.restart()),
    );
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  /**
   * How far past `waitTimeout` each acquire settled, less how late the
   * event loop ran meanwhile (a busy machine delays every timer alike).
   */
  async function overshoots(redlock: Redlock, waitTimeout: number) {
    const found: number[] = [];
    for (let i = 0; i < 3; i++) {
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const started = performance.now();
      const error = await redlock
        .acquire(`r${waitTimeout}-${i}`, { waitTimeout, ttl: 10_000 })
        .catch((e: unknown) => e);
      const elapsed = performance.now() - started;
      lag.disable();
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).reason).toBe('unreachable');
      found.push(elapsed - waitTimeout - lag.max / 1e6);
    }
    return found;
  }

  for (const [how, cut] of [
    ['refused (2 of 3 down)', (s: RedisServer) => s.kill()],
    [
      'answering nothing (2 of 3 frozen)',
      (s: RedisServer) => Promise.resolve(s.freeze()),
    ],
  ] as const)
    it(`nodes ${how}`, async () => {
      const redlock = new Redlock({
        clients: servers.map((s) => s.url),
        keyPrefix: prefix,
        nodeTimeout,
        logger: { warn: () => undefined },
      });
      await redlock.ready();
      await Promise.all(servers.slice(1).map((s) => cut(s)));
      try {
        for (const waitTimeout of [0, 400, 1000]) {
          const over = await overshoots(redlock, waitTimeout);
          // One node timeout for the attempt in flight, 50 ms for the rest.
          for (const ms of over) expect(ms).toBeLessThan(nodeTimeout + 50);
        }
      } finally {
        for (const s of servers) s.thaw();
        await redlock.quit();
      }
    });
});
