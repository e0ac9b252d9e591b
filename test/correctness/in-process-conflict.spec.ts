import { afterAll, describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, Redlock } from 'nestjs-redlock';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

// Callers of one process that do not wait (waitTimeout 0) and ask at once for
// a lock another process holds: the first goes to the nodes, the others queue
// behind it. Each must give the nodes' answer (the holder's lease left), not a
// guess: identical requests get one Retry-After.
describe('identical callers that do not wait, in one process', () => {
  const prefix = uniquePrefix('inproc');
  const make = () => new Redlock({ clients: quorumUrls(), keyPrefix: prefix });
  const holder = make();
  const asker = make();
  afterAll(() => Promise.all([holder.quit(), asker.quit()]));

  // nodeTimeout 2 s: a starved process must not read late refusals as
  // timeouts (`unreachable`); the subject here is the lease reported.
  it('all get the holder lease left, whoever of them went to the nodes', async () => {
    const held = await holder.acquire('sku', { ttl: 30_000 });
    const asks = Array.from({ length: 4 }, () =>
      asker
        .acquire('sku', { ttl: 10_000, waitTimeout: 0, nodeTimeout: 2000 })
        .then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    const errors = await Promise.all(asks);
    await held.release();
    for (const error of errors) {
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error).toMatchObject({ reason: 'busy' });
      // The holder's 30 s lease, not the callers' own 10 s ttl.
      expect((error as LockNotAcquiredError).retryAfter).toBeGreaterThan(
        10_000,
      );
      expect((error as LockNotAcquiredError).retryAfter).toBeLessThanOrEqual(
        30_000,
      );
    }
  });
});
