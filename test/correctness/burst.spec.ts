import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, type Lock } from 'nestjs-redlock';
import { flushed, uniquePrefix } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';
import { scanKeys } from '../../scripts/redis-nodes.mjs';

// Thousands of locks released in one tick (a batch job ending, a shutdown)
// keep a node busy longer than the node timeout (100 ms by default). A node
// that keeps answering is busy, not down: its late answers still count.
// Own servers: one of them is frozen.
describe('a burst of requests past the node timeout', () => {
  const { servers, admin, prefixed } = ownNodes(3);
  const count = 5000;

  const holdMany = async (prefix: string, warnings: string[]) => {
    const redlock = prefixed(prefix, {
      ttl: 30_000,
      logger: { warn: (message: string) => warnings.push(message) },
    });
    // Scripts loaded: the burst measures answers, not the NOSCRIPT path.
    await (await redlock.acquire('warm')).release();
    const locks: Lock[] = [];
    for (let i = 0; i < count; i += 500)
      locks.push(
        ...(await Promise.all(
          Array.from({ length: 500 }, (_, j) =>
            redlock.acquire(`many:${i + j}`),
          ),
        )),
      );
    return { redlock, locks };
  };

  it('5,000 locks released at once are all reported released, with no warning, and no key is left', async () => {
    const warnings: string[] = [];
    const prefix = uniquePrefix('burst');
    const { redlock, locks } = await holdMany(prefix, warnings);
    const results = await Promise.all(locks.map((lock) => lock.release()));
    // Each settles once a quorum deleted its key.
    expect(results.filter((r) => !r.released)).toEqual([]);
    expect(warnings).toEqual([]);
    await flushed(redlock);
    for (const client of admin)
      expect(await scanKeys(client, `${prefix}many:*`)).toEqual([]);
  });

  it('quit() during a burst of acquires lets them finish and take back what they were granted: no key is left but those of locks handed out', async () => {
    const prefix = uniquePrefix('quitburst');
    // A short node timeout: quit() waited at most two of them (+50 ms)
    // for attempts in flight, far less than the nodes take to work through
    // the burst; then it closed the connections under their clean-up.
    const redlock = prefixed(prefix, { ttl: 30_000, nodeTimeout: 50 });
    await (await redlock.acquire('warm')).release();
    const calls = Array.from({ length: count }, (_, i) =>
      i % 2 ? redlock.acquire(`many:${i}`) : redlock.tryAcquire(`many:${i}`),
    );
    const settled = Promise.allSettled(calls);
    // Every request is written before quit() runs.
    await new Promise((resolve) => setImmediate(resolve));
    await redlock.quit();
    const handedOut = new Set<string>();
    let refused = 0;
    for (const outcome of await settled) {
      if (outcome.status === 'fulfilled') {
        for (const key of outcome.value?.keys ?? []) handedOut.add(key);
      } else {
        // 'closed', or 'unreachable' for an attempt whose nodes were too
        // slow even for a busy node's wait (a loaded machine).
        expect(outcome.reason).toBeInstanceOf(LockNotAcquiredError);
        refused++;
      }
    }
    for (const client of admin) {
      const left = await scanKeys(client, `${prefix}many:*`);
      expect(left.filter((key) => !handedOut.has(key))).toEqual([]);
    }
    // quit() came before most answers: the test is about those.
    expect(refused).toBeGreaterThan(calls.length / 2);
  });

  it('a node frozen during the burst is still given up on: the releases settle with the others', async () => {
    const warnings: string[] = [];
    const { locks } = await holdMany(uniquePrefix('frozen'), warnings);
    servers[2].freeze();
    try {
      const results = await Promise.all(locks.map((lock) => lock.release()));
      expect(results.filter((r) => !r.released)).toEqual([]);
      const frozen = new Set(results.map((r) => r.nodes[2].outcome));
      // Settled at a quorum of the other two, or timed out waiting for it.
      expect(frozen.has('granted')).toBe(false);
    } finally {
      servers[2].thaw();
    }
  });
});
