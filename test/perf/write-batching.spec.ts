import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Socket } from 'node:net';
import { Redlock } from 'nestjs-redlock';
import { WRITE_BATCH } from '../../lib/core/nodes/redlock-node.js';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

// Many locks taken or released at the same moment by one process leave for
// each node in a few socket writes, not one write per lock; and in batches
// of at most WRITE_BATCH, so that the node starts on the first ones while
// the client prepares the rest.
describe('requests of one tick share socket writes per node', () => {
  let redlock: Redlock;

  beforeAll(async () => {
    redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: uniquePrefix('batch'),
      // 200 requests at once on a machine busy with other specs may keep a
      // node past the default 100 ms: a failed attempt would retry (more
      // writes), which is not what this test is about.
      ttl: 30_000,
      nodeTimeout: 3_000,
    });
    // Every connection up, not only a quorum (ready()): commands queued
    // for a connection still connecting are flushed one write each, which
    // is ioredis's start-up path, not the steady state measured here.
    await Promise.all(redlock.nodes.map((node) => node.client.ping()));
    // Load the scripts (NOSCRIPT fallback) before counting.
    await (await redlock.acquire('warm')).release();
  });
  afterAll(() => redlock.quit());

  /** Counts the writes that reach each node's socket while `fn` runs. */
  const countWrites = async (fn: () => Promise<void>): Promise<number[]> => {
    const counts = redlock.nodes.map(() => 0);
    const restore = redlock.nodes.map((node, i) => {
      const socket = node.client.stream as Socket & {
        _write: (...args: unknown[]) => unknown;
        _writev?: (...args: unknown[]) => unknown;
      };
      const { _write, _writev } = socket;
      socket._write = function (...args: unknown[]) {
        counts[i]++;
        return _write.apply(this, args);
      };
      if (_writev)
        socket._writev = function (...args: unknown[]) {
          counts[i]++;
          return _writev.apply(this, args);
        };
      return () => {
        socket._write = _write;
        if (_writev) socket._writev = _writev;
      };
    });
    try {
      await fn();
    } finally {
      for (const undo of restore) undo();
    }
    return counts;
  };

  it('200 acquires, then 200 releases, at once: batches of WRITE_BATCH per node', async () => {
    const count = 200;
    let locks: Awaited<ReturnType<Redlock['acquire']>>[] = [];
    const acquireWrites = await countWrites(async () => {
      locks = await Promise.all(
        Array.from({ length: count }, (_, i) => redlock.acquire(`r:${i}`)),
      );
    });
    expect(locks.every((lock) => lock.isHeld)).toBe(true);
    const releaseWrites = await countWrites(async () => {
      const results = await Promise.all(locks.map((lock) => lock.release()));
      expect(results.every((r) => r.released)).toBe(true);
    });
    // The first request of the tick alone, then full batches: a write per
    // lock would be 200, one write for the tick 2.
    const batches = 1 + Math.ceil((count - 1) / WRITE_BATCH);
    for (const writes of [...acquireWrites, ...releaseWrites]) {
      expect(writes).toBeGreaterThanOrEqual(batches);
      expect(writes).toBeLessThanOrEqual(batches + 3);
    }
  });
});
