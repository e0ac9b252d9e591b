import { afterAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, LockService, Redlock, type Lock } from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';

// `maxHold` on real Redis: the watchdog keeps a lock past its lease until
// maxHold, then the lock counts as lost (its signal aborts with a
// LockLostError, a warning is logged), it is no longer extended (its keys
// expire while the work may still run), and it is released on the nodes
// when the work settles. Promised by docs/locked.md ("The watchdog", "Lost
// locks", `watch()`) and RunOptions.maxHold.

const TTL = 450;

/** Resolves with `performance.now()` when `lock`'s signal aborts. */
const aborted = (lock: Lock) =>
  new Promise<number>((resolve) =>
    lock.signal.addEventListener('abort', () => resolve(performance.now()), {
      once: true,
    }),
  );

describe('maxHold', () => {
  const admin = inspect(quorumUrls());
  const warnings: string[] = [];
  const redlock = new Redlock({
    clients: quorumUrls(),
    keyPrefix: uniquePrefix('maxhold'),
    metaPrefix: uniquePrefix('maxhold-meta'),
    logger: { warn: (message) => warnings.push(message) },
  });
  // LockService.run() (docs/locked.md) and Redlock.using() (docs/core.md).
  const locks = new LockService(redlock);
  const pttls = (resource: string) =>
    Promise.all(admin.map((c) => c.pttl(redlock.keyOf(resource))));
  /** Resolves once no node has the key, or after `ms`. */
  const goneWithin = async (resource: string, ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      if ((await pttls(resource)).every((t) => t === -2)) return true;
      await sleep(10);
    }
    return false;
  };

  afterAll(async () => {
    await redlock.quit();
    await closeAll(admin);
  });

  it('LockService.run(): kept past its lease until maxHold, then lost: signal aborted, warning logged, no longer extended; rejects once the work settles', async () => {
    warnings.length = 0;
    const outcome = await locks
      .run(
        'bounded',
        async (lock) => {
          const started = performance.now();
          const lost = aborted(lock);
          // Past the lease: the watchdog extended it.
          await sleep(800);
          expect(lock.signal.aborted).toBe(false);
          for (const pttl of await pttls('bounded'))
            expect(pttl).toBeGreaterThan(0);
          const at = await lost;
          expect(at - started).toBeGreaterThanOrEqual(1200 - 10);
          expect(at - started).toBeLessThan(1200 + 500);
          expect(lock.signal.reason).toBeInstanceOf(LockLostError);
          expect((lock.signal.reason as Error).message).toMatch(
            /maxHold \(1200 ms\) was reached/,
          );
          // Not extended any more: its keys expire within a lease, while
          // the work still runs.
          expect(await goneWithin('bounded', TTL + 400)).toBe(true);
          expect(lock.isHeld).toBe(false);
          return 'done';
        },
        { ttl: TTL, maxHold: 1200 },
      )
      .catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect(outcome).toMatchObject({ settled: 'fulfilled', result: 'done' });
    expect((outcome as Error).message).toMatch(/maxHold/);
    expect(warnings).toEqual([
      expect.stringMatching(/"bounded".*maxHold \(1200 ms\) was reached/),
    ]);
  });

  it("Redlock.using() with onLockLost 'ignore': returns the work's result, and deletes the keys when the work settles rather than leaving them to expire", async () => {
    const result = await redlock.using(
      'ignored',
      async (lock) => {
        await aborted(lock);
        expect(lock.signal.reason).toBeInstanceOf(LockLostError);
        // The lease (5 s) runs on after the loss.
        for (const pttl of await pttls('ignored'))
          expect(pttl).toBeGreaterThan(0);
        return 'kept';
      },
      { ttl: 5000, maxHold: 200, onLockLost: 'ignore' },
    );
    expect(result).toBe('kept');
    await flushed(redlock);
    expect(await pttls('ignored')).toEqual([-2, -2, -2, -2, -2]);
  });

  it('watch(lock, { maxHold }): extended until maxHold, then onLost once with the signal’s reason, and left to expire', async () => {
    const lock = await redlock.acquire('by-hand', { ttl: TTL });
    const lost: LockLostError[] = [];
    const started = performance.now();
    const abortedAt = aborted(lock);
    redlock.watch(lock, { maxHold: 1000, onLost: (e) => lost.push(e) });
    await sleep(700);
    expect(lock.signal.aborted).toBe(false);
    for (const pttl of await pttls('by-hand')) expect(pttl).toBeGreaterThan(0);
    const at = await abortedAt;
    expect(at - started).toBeGreaterThanOrEqual(1000 - 10);
    expect(lost).toEqual([lock.signal.reason]);
    expect(lost[0].message).toMatch(/maxHold \(1000 ms\) was reached/);
    expect(await goneWithin('by-hand', TTL + 400)).toBe(true);
    expect(lost).toHaveLength(1);
    expect(redlock.keepAlive.size).toBe(0);
    await lock.release();
  });

  it('watch(): stopped before maxHold, the lock is not marked lost when maxHold passes', async () => {
    const lock = await redlock.acquire('stopped', { ttl: 3000 });
    const lost: LockLostError[] = [];
    const stop = redlock.watch(lock, {
      maxHold: 300,
      onLost: (e) => lost.push(e),
    });
    await sleep(100);
    stop();
    await sleep(400);
    expect(lost).toEqual([]);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.isHeld).toBe(true);
    expect((await lock.release()).released).toBe(true);
  });
});
