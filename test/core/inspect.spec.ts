import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock, RedlockConfigError } from 'nestjs-redlock';
import {
  flushed,
  quorumUrls,
  SLOW_RETRY,
  startListening,
  uniquePrefix,
} from '../utils/nodes.js';

describe('Redlock.inspect (who holds a resource, until when)', () => {
  let a: Redlock;
  let b: Redlock;
  beforeEach(() => {
    const options = {
      clients: quorumUrls(),
      keyPrefix: uniquePrefix('inspect'),
      logger: { warn: () => undefined },
    };
    a = new Redlock(options);
    b = new Redlock(options);
  });
  afterEach(() => Promise.all([a.quit(), b.quit()]));

  it('tells this instance from another holder, the lease left, the queue and the last token, never the value', async () => {
    await startListening(a, b);
    const lock = await a.acquire('order:42', { ttl: 5000, fencing: true });
    const waiting = b.acquire('order:42', SLOW_RETRY);
    await sleep(100);

    const mine = await a.inspect('order:42');
    expect(mine).toMatchObject({
      resource: 'order:42',
      key: `${a.keyPrefix}order:42`,
      held: true,
      holder: 'this-instance',
    });
    const theirs = await b.inspect('order:42');
    expect(theirs).toMatchObject({ held: true, holder: 'other' });
    for (const node of theirs.nodes) {
      expect(node).toMatchObject({
        up: true,
        exists: true,
        holder: 'other',
        queued: 1,
        fencingToken: lock.fencingToken,
      });
      expect(node.ttlMs).toBeGreaterThan(4000);
      expect(node.ttlMs).toBeLessThanOrEqual(5000);
    }
    expect(JSON.stringify([mine, theirs])).not.toContain(lock.value);

    await lock.release();
    const next = await waiting;
    expect(await a.inspect('order:42')).toMatchObject({
      held: true,
      holder: 'other',
    });
    await next.release();
    // A waited-for lock's release may leave at the next turn, and settles at a quorum.
    await flushed(b);
    const free = await a.inspect('order:42');
    expect(free.held).toBe(false);
    expect(free.holder).toBeUndefined();
    expect(free.nodes.every((n) => n.exists === false && n.queued === 0)).toBe(
      true,
    );
  });

  it('names a bad resource or timeout', async () => {
    await expect(a.inspect('')).rejects.toBeInstanceOf(RedlockConfigError);
    await expect(a.inspect('x', 0)).rejects.toMatchObject({
      field: 'timeoutMs',
    });
  });
});
