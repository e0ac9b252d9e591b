import { afterAll, describe, expect, it, jest } from '@jest/globals';
import {
  LockNotAcquiredError,
  Redlock,
  monotonicClock,
  type Clock,
} from 'nestjs-redlock';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import {
  closeAll,
  inspect,
  quorumUrls,
  uniquePrefix,
  watchCommands,
} from '../utils/nodes.js';

/** A clock that runs like the real one, plus an offset a test can push forward. */
class SteppableClock implements Clock {
  offset = 0;
  /** Added to the offset on every reading while armed (time passing "during" a call). */
  stepPerRead = 0;
  now(): number {
    this.offset += this.stepPerRead;
    return monotonicClock.now() + this.offset;
  }
  toEpoch(t: number): number {
    return monotonicClock.toEpoch(t - this.offset);
  }
}

describe('time comes from the injected monotonic clock', () => {
  const prefix = uniquePrefix('clock');
  const nodes = inspect(quorumUrls());
  afterAll(() => closeAll(nodes));
  /** An instance on the quorum nodes whose time the test steps. */
  const clocked = (ttl: number) => {
    const clock = new SteppableClock();
    const redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      ttl,
      clock,
    });
    return { clock, redlock };
  };

  it('a lock whose validity ran out during the acquire is a failure and leaves no key', async () => {
    const { clock, redlock } = clocked(1000);
    clock.stepPerRead = 1000; // each reading is 1 s later: elapsed >= ttl, no validity left
    const error = await redlock
      .acquire('slow-quorum', { waitTimeout: 0 })
      .catch((e: unknown) => e);
    clock.stepPerRead = 0;
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect((error as LockNotAcquiredError).reason).toBe('expired');
    for (const node of nodes)
      expect(await scanKeys(node, `${prefix}slow-quorum`)).toEqual([]);
    await redlock.quit();
  });

  it('validity counts from the start of the attempt: time passing while the nodes answer is taken off', async () => {
    const { clock, redlock } = clocked(2000);
    // 300 ms pass once the attempt's first request is out (the request
    // itself goes to Redis unchanged).
    let delayed = false;
    const stop = watchCommands(redlock.nodes[0].client, (command) => {
      if (command.name === 'evalsha' && !delayed) {
        delayed = true;
        clock.offset += 300;
      }
    });
    const lock = await redlock.acquire('elapsed', { waitTimeout: 0 });
    expect(delayed).toBe(true);
    stop();
    // drift = 2000 * 0.01 + 2 = 22 ms; counted from the end of the
    // attempt, about 1978 ms would be left.
    expect(lock.remaining()).toBeLessThanOrEqual(2000 - 22 - 300);
    expect(lock.remaining()).toBeGreaterThan(1000);
    await lock.release();
    await redlock.quit();
  });

  it('a lock is invalid once the clock passes its validity, and extend then fails and aborts the signal', async () => {
    const { clock, redlock } = clocked(5000);
    const lock = await redlock.acquire('paused');
    expect(lock.isHeld).toBe(true);
    clock.offset += 6000; // as if the process had been paused for 6 s
    expect(lock.isHeld).toBe(false);
    await expect(lock.extend()).rejects.toMatchObject({
      name: 'LockExtendError',
    });
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as Error).name).toBe('LockLostError');
    await lock.release();
    await redlock.quit();
  });

  it('ignores the wall clock: Date.now jumping an hour changes nothing', async () => {
    const redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      ttl: 2000,
    });
    const lock = await redlock.acquire('wall');
    const before = lock.remaining();
    const spy = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 3_600_000);
    try {
      expect(lock.isHeld).toBe(true);
      await lock.extend();
      expect(lock.remaining()).toBeGreaterThan(before - 500);
      const other = await redlock.tryAcquire('wall');
      expect(other).toBeNull();
    } finally {
      spy.mockRestore();
    }
    await lock.release();
    await redlock.quit();
  });
});
