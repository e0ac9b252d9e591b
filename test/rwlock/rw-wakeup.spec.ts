import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock, type Lock } from 'nestjs-redlock';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

// A read/write lock released in the process while a waiter's attempt is
// out (refused by that very lock) wakes the waiter at once: it was not
// waiting yet when the release's wake-up went out.
describe('read/write lock: a release during an attempt', () => {
  const keyPrefix = uniquePrefix('rwwake');
  const redlocks: Redlock[] = [];
  const make = () => {
    const r = new Redlock({ clients: quorumUrls(), keyPrefix });
    redlocks.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
  });

  // A poll no test below should need: only a wake-up ends the wait in time.
  const patient = { waitTimeout: 30_000, retryDelay: 20_000, retryJitter: 0 };

  for (const [held, waiting] of [
    ['read', 'write'],
    ['write', 'read'],
  ] as const) {
    it(`asks again at once when the ${held} lock that refused a ${waiting === 'write' ? 'writer' : 'reader'} is released meanwhile`, async () => {
      const r = make();
      const holder = await r.acquire(`${held}-first`, { mode: held });
      // The waiter's attempt is sent first and refused; the release, sent
      // right after on the same connections, lands while the refusal is
      // on its way back.
      const retries = r.stats.retries;
      const asked = r.acquire(`${held}-first`, { ...patient, mode: waiting });
      await holder.release();
      const lock = await Promise.race([
        asked,
        new Promise<'slept'>((resolve) =>
          setTimeout(() => resolve('slept'), 10_000).unref(),
        ),
      ]);
      expect(lock).not.toBe('slept');
      // It was refused once (the case under test), then got the lock.
      expect(r.stats.retries).toBe(retries + 1);
      await (lock as Lock).release();
    });
  }
});
