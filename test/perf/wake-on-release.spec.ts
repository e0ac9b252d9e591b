import { describe, expect, it } from '@jest/globals';
import type { RedlockOptions } from 'nestjs-redlock';
import { flushed, scriptCalls, uniquePrefix } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';

// What waiting costs the nodes: callers of one process that wait for the
// same lock queue in-process, so only the first talks to Redis. Own
// servers: the test counts commands per node. Who is woken and who gets
// the lock: test/correctness/wake-on-release.spec.ts.
describe('wake on release, local queue', () => {
  const own = ownNodes(3);
  const { admin } = own;
  const make = (options: Partial<RedlockOptions> = {}) =>
    own.make({ keyPrefix: uniquePrefix('wake'), ...options });
  const evalshaCalls = () => scriptCalls(admin);

  it('100 waiters in one process cost the nodes what one waiter costs', async () => {
    const prefix = uniquePrefix('queue');
    const owner = make({ keyPrefix: prefix });
    const waiting = make({ keyPrefix: prefix });
    const holdMs = 1200;
    const options = { retryDelay: 50, retryJitter: 50, waitTimeout: 20_000 };

    const measure = async (resource: string, waiters: number) => {
      const held = await owner.acquire(resource, { ttl: 10_000 });
      const before = await evalshaCalls();
      const pending = Array.from({ length: waiters }, () =>
        waiting.acquire(resource, options).then((lock) => lock.release()),
      );
      await new Promise((r) => setTimeout(r, holdMs));
      const during = (await evalshaCalls()) - before;
      await held.release();
      const results = await Promise.all(pending);
      expect(results.every((r) => r.released)).toBe(true);
      return during;
    };
    const one = await measure('one', 1);
    const hundred = await measure('hundred', 100);
    // Polling at 50-100 ms for 1.2 s on 3 nodes: some tens of scripts for
    // one waiter; the same, not a hundred times more, for a hundred.
    expect(one).toBeGreaterThan(0);
    expect(hundred).toBeLessThanOrEqual(one * 2 + 15);
    // The last release may be held back until the loop turns (deferred).
    await flushed(waiting);
    expect(waiting.contention.queue.size).toBe(0);
  });
});
