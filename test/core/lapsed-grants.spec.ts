import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock, monotonicClock, type Clock } from 'nestjs-redlock';
import { transferred } from '../../lib/core/contention/transferred.js';
import type { ContentionHost } from '../../lib/core/contention/host.js';
import type { QueuePlace } from '../../lib/core/contention/queue-place.js';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

/** The real clock plus an offset the test pushes forward (time "passing" during a call). */
class SteppableClock implements Clock {
  offset = 0;
  now(): number {
    return monotonicClock.now() + this.offset;
  }
  toEpoch(t: number): number {
    return monotonicClock.toEpoch(t - this.offset);
  }
}

// Two ways a lock that had lapsed could come back to life, both found by
// the fault harness (docs/faults.md): an extension answered only after the
// lock's validity ran out, and a key given to a waiter by a release
// message that reached it after the key had expired.
describe('a lapsed lock stays lapsed', () => {
  const prefix = uniquePrefix('lapsed');
  const nodes = inspect(quorumUrls());
  afterAll(() => closeAll(nodes));

  it('an extension whose quorum came after the validity ran out loses the lock', async () => {
    const clock = new SteppableClock();
    const redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      clock,
    });
    try {
      const lock = await redlock.acquire('extend-late', { ttl: 10_000 });
      const lapsedAt = lock.validUntil;
      // The requests leave now; their answers are read after the lock's
      // validity ran out (a stalled connection, a paused process): the
      // keys may have expired meanwhile, gone to another holder and been
      // handed back. The new validity would still be ahead.
      const extending = lock.extend();
      clock.offset += lapsedAt - clock.now() + 1;
      await expect(extending).rejects.toThrow(/validity had run out/);
      expect(lock.isLost).toBe(true);
      expect(lock.signal.aborted).toBe(true);
    } finally {
      await redlock.quit();
    }
  });

  it('an extension answered in time still extends (the control of the test above)', async () => {
    const redlock = new Redlock({ clients: quorumUrls(), keyPrefix: prefix });
    try {
      const lock = await redlock.acquire('extend-in-time', { ttl: 10_000 });
      const before = lock.validUntil;
      await lock.extend();
      expect(lock.isLost).toBe(false);
      expect(lock.validUntil).toBeGreaterThanOrEqual(before);
    } finally {
      await redlock.quit();
    }
  });

  describe('a key given by a release message counts only if given after our latest refusal there', () => {
    // The rule itself (transferred()), on a context of three nodes.
    const ctx = {
      quorum: 2,
      standing: { counts: () => true },
      clock: monotonicClock,
    } as unknown as ContentionHost;
    const waiter = (queue: QueuePlace) => ({
      resources: ['r'],
      keys: ['lock:r'],
      value: 'v',
      timing: { ttl: 10_000, drift: 102 } as never,
      queue,
    });
    const sent = monotonicClock.now();
    const place = (refusedAt: (number | undefined)[]): QueuePlace => ({
      life: 1000,
      arrival: Date.now(),
      name: 'n',
      answeredAt: [sent, sent, sent],
      refusedAt,
    });
    const all = 0b111;

    it('grants noted after the refusals ran (node clock): the lock is ours', () => {
      const lock = transferred(ctx, waiter(place([1000, 1000, 1000])), {
        bits: all,
        at: [1001, 1005, 1003],
      });
      expect(lock).toBeDefined();
    });

    it('grants from before the refusals (delivered late): not ours, the waiter asks again', () => {
      const lock = transferred(ctx, waiter(place([1000, 1000, 1000])), {
        bits: all,
        at: [999, 1000, 400],
      });
      expect(lock).toBeUndefined();
    });

    it('one node’s late grant does not count toward the quorum', () => {
      expect(
        transferred(ctx, waiter(place([1000, 1000, 1000])), {
          bits: all,
          at: [900, 1001, 999],
        }),
      ).toBeUndefined();
      expect(
        transferred(ctx, waiter(place([1000, 1000, 1000])), {
          bits: all,
          at: [900, 1001, 1002],
        }),
      ).toBeDefined();
    });

    it('a node whose latest answer granted needs no order; a grant that says no time does', () => {
      expect(
        transferred(ctx, waiter(place([undefined, undefined, 1000])), {
          bits: all,
          at: [Number.NaN, Number.NaN, 5],
        }),
      ).toBeDefined();
      expect(
        transferred(ctx, waiter(place([1000, 1000, undefined])), {
          bits: all,
          at: [Number.NaN, Number.NaN, 5],
        }),
      ).toBeUndefined();
    });
  });

  it('on the wire: a queued refusal says when it ran, and a release that gives the key says when', async () => {
    const redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      retryDelay: 5000,
      retryJitter: 0,
    });
    const other = new Redlock({ clients: quorumUrls(), keyPrefix: prefix });
    const sub = inspect([quorumUrls()[0]])[0];
    try {
      const held = await other.acquire('wire', { ttl: 10_000 });
      const messages: string[] = [];
      await sub.psubscribe('redlock:w:*');
      sub.on('pmessage', (_p, _c, m: string) => messages.push(m));
      const before = Number((await nodes[0].time())[0]) * 1000;
      const waiting = redlock.acquire('wire', { waitTimeout: 8000 });
      // Wait until the waiter is queued on node 0, then release.
      for (let i = 0; i < 200; i++) {
        if ((await nodes[0].zcard(`redlock:q:${prefix}wire`)) > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      await held.release();
      const lock = await waiting;
      const given = messages.find((m) => m.startsWith(`${prefix}wire\n`));
      expect(given).toMatch(/\n1 \d+$/);
      const at = Number(given!.split(' ').pop());
      expect(at).toBeGreaterThanOrEqual(before);
      await lock.release();
    } finally {
      await sub.quit();
      await Promise.all([redlock.quit(), other.quit()]);
    }
  });
});
