import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Redlock } from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { LINES_BEFORE_SWEEP } from '../../lib/core/contention/line.js';
import { closeAll, uniquePrefix } from '../utils/nodes.js';

// Local lines end with their locks, and the watchdog's batches extend each
// lock by its own lease, in time, without waiting for a hung node. What
// state is left and what the batches cost: test/perf/state-and-watchdog.spec.ts.
describe('no per-resource state outlives its lock; batched watchdog', () => {
  let servers: RedisServer[];
  let admin: Redis[];
  let redlock: Redlock;
  const prefix = uniquePrefix('mem');

  beforeAll(async () => {
    servers = await startServers(3);
    admin = servers.map((s) => s.client());
    redlock = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: prefix,
    });
  });
  afterAll(async () => {
    await redlock.quit();
    await closeAll(admin);
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('a lock left to expire unreleased does not keep its local line for good', async () => {
    const expiring = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: uniquePrefix('expire'),
      ttl: 300,
    });
    try {
      // Run once per key and let the lock run out: never released.
      // As many as a new line finds before it looks for run-out ones.
      const count = LINES_BEFORE_SWEEP;
      for (let i = 0; i < count; i += 100)
        await Promise.all(
          Array.from({ length: 100 }, (_, j) =>
            expiring.acquire(`job:${i + j}`),
          ),
        );
      expect(expiring.contention.queue.size).toBe(count);
      await new Promise((r) => setTimeout(r, 400));
      // The next new line finds them run out, and ends them.
      const next = await expiring.acquire('job:next');
      expect(expiring.contention.queue.size).toBe(1);
      // A swept resource is free again: its key ran out on the nodes.
      const again = await expiring.tryAcquire('job:0');
      expect(again).not.toBeNull();
      await Promise.all([next.release(), again?.release()]);
      expect(expiring.contention.queue.size).toBe(0);
    } finally {
      await expiring.quit();
    }
  });

  it('a lock watched by hand and released without stopping the watch is dropped, not reported lost', async () => {
    const lost: unknown[] = [];
    const lock = await redlock.acquire('watched-by-hand', { ttl: 600 });
    // Never stopped: the release alone must end the watch.
    redlock.watch(lock, { maxHold: 300, onLost: (e) => lost.push(e) });
    expect(redlock.keepAlive.size).toBe(1);
    await lock.release();
    // Past a tick (a third of the lease) and past maxHold.
    await new Promise((r) => setTimeout(r, 700));
    expect(redlock.keepAlive.size).toBe(0);
    expect(lost).toEqual([]);
    expect(lock.isLost).toBe(false);
    // Watching a released lock does nothing; a lost one is reported at once.
    redlock.watch(lock);
    expect(redlock.keepAlive.size).toBe(0);
    const gone = await redlock.acquire('watched-lost');
    gone.markLost('test');
    redlock.watch(gone, { onLost: (e) => lost.push(e) });
    expect(lost).toEqual([gone.signal.reason]);
    expect(redlock.keepAlive.size).toBe(0);
    await gone.release();
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('a lock watched by the watchdog and extended by hand to a shorter lease is extended in time for it', async () => {
    const lock = await redlock.acquire('shorter', { ttl: 3000 });
    const stop = redlock.watch(lock);
    await sleep(100);
    await lock.extend(600);
    // The next tick was due a third into the 3 s lease (1 s): past the
    // 600 ms one. It must come a third into the new lease.
    await sleep(1100);
    expect(lock.isLost).toBe(false);
    expect(lock.remaining()).toBeGreaterThan(0);
    stop();
    await lock.release();
  });

  it('one batch extends locks of one key and of several keys, by their own leases, and only where the value still holds', async () => {
    const single = await redlock.acquire('mix:a', { ttl: 2000 });
    const multi = await redlock.acquire(['mix:b', 'mix:c'], { ttl: 2000 });
    const longer = await redlock.acquire('mix:d', { ttl: 5000 });
    const taken = await redlock.acquire('mix:e', { ttl: 2000 });
    // Someone else's value on one node (the key expired and was taken).
    await admin[0].set(`${prefix}mix:e`, 'someone-else', 'PX', 2000);
    await redlock.extendMany([single, multi, longer, taken]);
    const pttl = (key: string) =>
      Promise.all(admin.map((c) => c.pttl(`${prefix}${key}`)));
    // Renewed to their leases: above what is left of the first 2 s.
    for (const key of ['mix:a', 'mix:b', 'mix:c'])
      for (const left of await pttl(key)) expect(left).toBeGreaterThan(1900);
    for (const left of await pttl('mix:d')) expect(left).toBeGreaterThan(4900);
    // Extended where its value held (a quorum of 2 of 3): still held.
    expect(taken.isLost).toBe(false);
    expect(await admin[0].get(`${prefix}mix:e`)).toBe('someone-else');
    await Promise.all([single, multi, longer, taken].map((l) => l.release()));
  });

  it('a batch extension settles with the lease it sent, not one an extension by hand set meanwhile', async () => {
    const lock = await redlock.acquire('race', { ttl: 1500 });
    servers[1].freeze();
    servers[2].freeze();
    try {
      // Both wait for a frozen node to reach a quorum; every node runs the
      // hand's 60 s first and the batch's 1.5 s last.
      const byHand = lock.extend(60_000);
      const batch = redlock.extendMany([lock]);
      await sleep(50);
      servers[1].thaw();
      servers[2].thaw();
      await byHand;
      await batch;
    } finally {
      servers[1].thaw();
      servers[2].thaw();
    }
    const pttls = await Promise.all(admin.map((c) => c.pttl(`${prefix}race`)));
    for (const pttl of pttls) expect(pttl).toBeLessThanOrEqual(1500);
    expect(lock.remaining()).toBeLessThanOrEqual(1500);
    await lock.release();
  });

  it('a batch waiting for a hung node does not hold up the extension of other locks', async () => {
    const long = await redlock.acquire('slow-batch', { ttl: 6000 });
    const stopLong = redlock.watch(long);
    await sleep(1900);
    const short = await redlock.acquire('quick', { ttl: 1500 });
    // Not due when the long lock's batch leaves (about 2 s in), which then
    // waits for the frozen node for up to half its validity (2 s).
    const stopShort = redlock.watch(short);
    servers[2].freeze();
    try {
      await sleep(1700);
      // Its lease (1.5 s) would have run out had nobody extended it.
      expect(short.isLost).toBe(false);
      expect(short.remaining()).toBeGreaterThan(0);
    } finally {
      servers[2].thaw();
    }
    stopLong();
    stopShort();
    await Promise.all([long.release(), short.release()]);
  });

  it('quit() while work holds a lock: the watchdog keeps it for shutdownTimeout, then its signal aborts and it is released', async () => {
    const closing = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: uniquePrefix('quit'),
      ttl: 600,
      shutdownTimeout: 900,
    });
    let aborted = false;
    const running = closing.using('work', async (lock) => {
      await sleep(1200);
      aborted = lock.signal.aborted;
    });
    await sleep(100);
    const started = Date.now();
    await closing.quit();
    // Longer than the 600 ms lease: the watchdog extended it meanwhile.
    expect(Date.now() - started).toBeGreaterThanOrEqual(850);
    const outcome = await running.catch((e: unknown) => e);
    expect(aborted).toBe(true);
    expect(outcome).toMatchObject({ name: 'LockLostError' });
  });
});
