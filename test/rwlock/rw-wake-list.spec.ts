import { afterAll, describe, expect, it } from '@jest/globals';
import { JitteredRetry, Redlock, type Lock } from 'nestjs-redlock';
import {
  closeAll,
  inspect,
  parked,
  quorumUrls,
  settledTo,
  uniquePrefix,
} from '../utils/nodes.js';

// Read/write waiters of another instance (another process, as far as the
// lock can tell) are woken by a release that frees the lock, through the
// nodes' wake lists and the release listener, instead of sleeping until
// their poll.
describe('read/write locks: wake-ups across processes', () => {
  const keyPrefix = uniquePrefix('wake');
  const metaPrefix = uniquePrefix('wake-meta');
  const admin = inspect(quorumUrls());
  const redlocks: Redlock[] = [];
  const make = (options: { waitStrategy?: JitteredRetry } = {}) => {
    const r = new Redlock({
      clients: quorumUrls(),
      keyPrefix,
      metaPrefix,
      ...options,
    });
    redlocks.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });

  // A poll no test below should need: only a wake-up ends the wait in time.
  const patient = { waitTimeout: 30_000, retryDelay: 20_000, retryJitter: 0 };

  /** `asked`, or 'slept' if it is not settled within 10 s (its poll is 20 s). */
  const inTime = (asked: Promise<Lock>) =>
    Promise.race([
      asked,
      new Promise<'slept'>((resolve) =>
        setTimeout(() => resolve('slept'), 10_000).unref(),
      ),
    ]);

  /** The wake lists of `resource`, node by node: their entries. */
  const wakeLists = (resource: string) =>
    Promise.all(
      admin.map((c) => c.smembers(`${metaPrefix}sw:${keyPrefix}${resource}`)),
    );

  const cases: {
    name: string;
    held: { mode: 'read' | 'write' };
    waiting: { mode: 'read' | 'write' };
  }[] = [
    { name: 'a writer', held: { mode: 'write' }, waiting: { mode: 'read' } },
    {
      name: 'the last reader',
      held: { mode: 'read' },
      waiting: { mode: 'write' },
    },
  ];
  for (const { name, held, waiting } of cases) {
    it(`wakes a waiter of another instance when ${name} is released`, async () => {
      const resource = `freed-${name.replace(/ /g, '-')}`;
      // A lease longer than the test: only a wake-up ends the wait early.
      const holder = await make().acquire(resource, { ...held, ttl: 60_000 });
      const other = make();
      const retries = other.stats.retries;
      const asked = other.acquire(resource, { ...patient, ...waiting });
      expect(await parked(other, retries)).toBeGreaterThanOrEqual(retries + 1);
      // The waiter is on every node's wake list (once each has answered).
      const one = admin.map(() => 1);
      expect(
        await settledTo(
          async () => (await wakeLists(resource)).map((l) => l.length),
          one,
        ),
      ).toEqual(one);
      await holder.release();
      const lock = await inTime(asked);
      expect(lock).not.toBe('slept');
      // Taken off every list: by the release that told it.
      const none = admin.map(() => []);
      expect(await settledTo(() => wakeLists(resource), none)).toEqual(none);
      await (lock as Lock).release();
    });
  }

  it('takes no place on the wake lists with a wait strategy that does not listen, nor for tryAcquire()', async () => {
    const holder = await make().acquire('no-place', { mode: 'write' });
    const polling = make({ waitStrategy: new JitteredRetry() });
    const retries = polling.stats.retries;
    const asked = polling.acquire('no-place', {
      mode: 'read',
      waitTimeout: 30_000,
      retryDelay: 50,
      retryJitter: 0,
    });
    expect(await parked(polling, retries)).toBeGreaterThanOrEqual(retries + 1);
    expect(await make().tryAcquire('no-place', { mode: 'read' })).toBeNull();
    expect(await wakeLists('no-place')).toEqual(admin.map(() => []));
    await holder.release();
    await (await asked).release();
  });
});
