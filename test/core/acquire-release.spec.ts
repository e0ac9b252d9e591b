import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { LockNotAcquiredError, Redlock } from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';
import { scanKeys } from '../../scripts/redis-nodes.mjs';

/**
 * Operations settle once a quorum answered; the remaining nodes follow a
 * moment later. Tests that inspect every node wait for them.
 */
const settle = () => new Promise((r) => setTimeout(r, 50));

describe('Redlock on five nodes: acquire, release, extend', () => {
  const prefix = uniquePrefix('core');
  let redlock: Redlock;
  let other: Redlock;
  let nodes: Redis[];

  beforeAll(() => {
    redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      ttl: 2000,
    });
    other = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      ttl: 2000,
    });
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await redlock.quit();
    await other.quit();
    await closeAll(nodes);
  });

  it('stores a plain string key holding lock.value with a PX expiry on every node', async () => {
    const lock = await redlock.acquire('order:42');
    await settle();
    for (const node of nodes) {
      expect(await node.get(`${prefix}order:42`)).toBe(lock.value);
      const pttl = await node.pttl(`${prefix}order:42`);
      expect(pttl).toBeGreaterThan(1000);
      expect(pttl).toBeLessThanOrEqual(2000);
    }
    expect((await lock.release()).released).toBe(true);
    await flushed(redlock);
    for (const node of nodes)
      expect(await node.exists(`${prefix}order:42`)).toBe(0);
  });

  it('uses at least 16 random bytes per lock value, never the same twice', async () => {
    // Values are cut from a pool of 200 refilled at random: 450 locks
    // span three fills.
    const locks = await Promise.all(
      Array.from({ length: 450 }, (_, i) => redlock.acquire(`value:${i}`)),
    );
    for (const lock of locks)
      expect(
        Buffer.from(lock.value, 'base64url').length,
      ).toBeGreaterThanOrEqual(16);
    expect(new Set(locks.map((l) => l.value)).size).toBe(locks.length);
    await Promise.all(locks.map((l) => l.release()));
  });

  it('computes validity as ttl - elapsed - drift', async () => {
    const before = Date.now();
    const lock = await redlock.acquire('validity');
    const after = Date.now();
    // drift = 2000 * 0.01 + 2 = 22 ms
    expect(lock.validUntil).toBeLessThanOrEqual(after + 2000 - 22 + 1);
    expect(lock.validUntil).toBeGreaterThanOrEqual(before + 2000 - 22 - 50);
    expect(lock.remaining()).toBeGreaterThan(1800);
    await lock.release();
  });

  it('refuses a held resource (tryAcquire resolves null) and frees it on release', async () => {
    const lock = await redlock.acquire('busy');
    expect(await other.tryAcquire('busy')).toBeNull();
    await lock.release();
    const next = await other.tryAcquire('busy');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('rejects with LockNotAcquiredError (reason busy, per-node answers) after the wait timeout', async () => {
    const lock = await redlock.acquire('wait');
    const error = await other
      .acquire('wait', { waitTimeout: 150, retryDelay: 20, retryJitter: 10 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    const e = error as LockNotAcquiredError;
    expect(e.name).toBe('LockNotAcquiredError');
    expect(e.reason).toBe('busy');
    expect(e.resources).toEqual(['wait']);
    expect(e.attempts).toBeGreaterThan(1);
    expect(
      e.nodes.filter((n) => n.outcome === 'busy').length,
    ).toBeGreaterThanOrEqual(3);
    expect(e.retryAfter).toBeGreaterThan(0);
    expect(e.message).toContain('"wait"');
    await lock.release();
  });

  it('waits for a held resource and gets it once released', async () => {
    const lock = await redlock.acquire('handoff');
    const before = { ...other.stats };
    setTimeout(() => void lock.release(), 100);
    const next = await other.acquire('handoff', { waitTimeout: 2000 });
    expect(next.isHeld).toBe(true);
    expect(other.stats.acquired).toBe(before.acquired + 1);
    expect(other.stats.waited).toBe(before.waited + 1);
    expect(other.stats.retries).toBeGreaterThan(before.retries);
    await next.release();
  });

  it("never deletes another holder's lock on release", async () => {
    const first = await redlock.acquire('steal', { ttl: 200 });
    await new Promise((r) => setTimeout(r, 300)); // first's lease runs out
    const second = await other.acquire('steal');
    const result = await first.release();
    expect(result.released).toBe(false);
    expect(result.expired).toBe(true);
    await settle();
    for (const node of nodes)
      expect(await node.get(`${prefix}steal`)).toBe(second.value);
    await second.release();
  });

  it('releasing twice is harmless and returns the first result', async () => {
    const lock = await redlock.acquire('twice');
    const a = await lock.release();
    const b = await lock.release();
    expect(b).toBe(a);
  });

  it('extends a lock past its first ttl', async () => {
    const lock = await redlock.acquire('extend', { ttl: 300 });
    await new Promise((r) => setTimeout(r, 200));
    await lock.extend();
    await new Promise((r) => setTimeout(r, 200));
    expect(await other.tryAcquire('extend')).toBeNull(); // 400 ms > first ttl
    expect(lock.isHeld).toBe(true);
    await lock.extend(1000);
    await settle();
    for (const node of nodes)
      expect(await node.pttl(`${prefix}extend`)).toBeGreaterThan(800);
    await lock.release();
  });

  it('watch() keeps a lock acquired by hand alive past its lease until stopped', async () => {
    const lock = await redlock.acquire('watched', { ttl: 300 });
    const stop = redlock.watch(lock);
    await new Promise((r) => setTimeout(r, 900)); // three leases
    expect(lock.isHeld).toBe(true);
    expect(await other.tryAcquire('watched')).toBeNull();
    stop();
    await new Promise((r) => setTimeout(r, 450)); // no longer extended
    expect(lock.isHeld).toBe(false);
    const next = await other.tryAcquire('watched');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('locks several resources all or nothing', async () => {
    const a = await redlock.acquire(['multi:1', 'multi:2']);
    expect(await other.tryAcquire(['multi:2', 'multi:3'])).toBeNull();
    for (const node of nodes)
      expect(await node.exists(`${prefix}multi:3`)).toBe(0);
    await a.release();
    const b = await other.acquire(['multi:3', 'multi:2', 'multi:2']);
    expect(b.resources).toEqual(['multi:2', 'multi:3']);
    await b.release();
  });

  it('leaves no key behind after a failed acquire', async () => {
    const held = await redlock.acquire('left:2');
    await expect(
      other.acquire(['left:1', 'left:2'], { waitTimeout: 0 }),
    ).rejects.toBeInstanceOf(LockNotAcquiredError);
    for (const node of nodes)
      expect(await scanKeys(node, `${prefix}left:1`)).toEqual([]);
    await held.release();
  });
});

describe('extend never resurrects an expired lock', () => {
  const prefix = uniquePrefix('resurrect');
  const redlock = new Redlock({ clients: quorumUrls(), keyPrefix: prefix });
  const nodes = inspect(quorumUrls());
  afterAll(async () => {
    await redlock.quit();
    await closeAll(nodes);
  });

  it('fails, aborts the signal and leaves the keys absent when they vanished on a quorum', async () => {
    const lock = await redlock.acquire('gone');
    // As if the keys had expired on three nodes while the holder was paused.
    await Promise.all(nodes.slice(0, 3).map((n) => n.del(`${prefix}gone`)));
    const error = await lock.extend().catch((e: unknown) => e);
    expect((error as Error).name).toBe('LockExtendError');
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as Error).name).toBe('LockLostError');
    for (const node of nodes.slice(0, 3))
      expect(await node.exists(`${prefix}gone`)).toBe(0);
    // The failed extension also took back the minority copies (a PING on
    // each of redlock's connections answers after that release ran).
    await flushed(redlock);
    for (const node of nodes.slice(3))
      expect(await node.exists(`${prefix}gone`)).toBe(0);
  });
});
