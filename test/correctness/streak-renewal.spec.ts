import { describe, expect, it } from '@jest/globals';
import type { Lock, ReleaseResult } from 'nestjs-redlock';
import { MAX_RENEWALS } from '../../lib/core/contention/line.js';
import { KEEP_SCRIPT } from '../../lib/core/scripts/index.js';
import {
  flushed,
  scriptCalls,
  SLOW_RETRY,
  uniquePrefix,
} from '../utils/nodes.js';
import { COUNTING, ownNodes } from '../utils/own-nodes.js';

// The end of an in-process handoff streak when no other process waits:
// the nodes renew the lease for the next caller of the process (one
// round trip) instead of a release and a new acquire. Own servers: the
// tests count script calls per node.
describe('renewal at the end of a handoff streak', () => {
  const own = ownNodes(3, COUNTING);
  const { servers, admin } = own;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const make = own.prefixed;
  /** How a release went: to a waiting caller as it stood, renewed on the nodes, or to the nodes. */
  const how = (r: ReleaseResult) =>
    r.handedOver ? (r.nodes.length ? 'renewed' : 'handed') : 'nodes';
  const granted = (r: ReleaseResult) =>
    r.nodes.filter((n) => n.outcome === 'granted').length;

  /** `count` callers of `redlock` queued in-process for `sku`. */
  const queue = (redlock: ReturnType<typeof make>, count: number) =>
    Array.from({ length: count }, () => redlock.acquire('sku', SLOW_RETRY));

  it('no other process waits: the next caller gets the lease renewed, one script per node, same value', async () => {
    // The keep script is loaded already: a first call would count twice
    // (NOSCRIPT, then the source).
    await Promise.all(admin.map((c) => c.script('LOAD', KEEP_SCRIPT.source)));
    const prefix = uniquePrefix('renew');
    const redlock = make(prefix, { localHandoff: 2 });
    const first = await redlock.acquire('sku');
    const waiters = queue(redlock, 3);
    await sleep(50);
    const before = await scriptCalls(admin);
    let current: Lock = first;
    for (let i = 0; i < 2; i++) {
      expect(how(await current.release())).toBe('handed');
      current = await waiters[i];
    }
    expect((await scriptCalls(admin)) - before).toBe(0);
    await sleep(30);
    // The streak ends: renewed for the third caller.
    const result = await current.release();
    expect(how(result)).toBe('renewed');
    expect(granted(result)).toBeGreaterThanOrEqual(2);
    const renewed = await waiters[2];
    expect(renewed.value).toBe(first.value);
    expect(renewed.validUntil).toBeGreaterThan(current.validUntil + 20);
    await flushed(redlock);
    expect((await scriptCalls(admin)) - before).toBe(servers.length);
    // Every node holds it with the renewed lease, not what was left of the first.
    const key = `${prefix}sku`;
    const values = await Promise.all(admin.map((c) => c.get(key)));
    expect(values).toEqual(servers.map(() => first.value));
    const pttls = await Promise.all(admin.map((c) => c.pttl(key)));
    for (const pttl of pttls)
      expect(pttl).toBeGreaterThanOrEqual(renewed.remaining() - 1);
    await renewed.release();
    await flushed(redlock);
    expect(await Promise.all(admin.map((c) => c.exists(key)))).toEqual(
      servers.map(() => 0),
    );
  });

  it('another process queued on the nodes: the streak ends with a release, and that process gets the lock', async () => {
    const prefix = uniquePrefix('queued');
    const replica = make(prefix, { localHandoff: 1 });
    const other = make(prefix);
    const held = await replica.acquire('sku');
    const [local] = queue(replica, 1);
    const remote = other.acquire('sku', SLOW_RETRY);
    await sleep(100);
    expect(how(await held.release())).toBe('handed');
    const mine = await local;
    const [again] = queue(replica, 1);
    await sleep(50);
    const result = await mine.release();
    expect(how(result)).toBe('nodes');
    expect(result.released).toBe(true);
    const remoteLock = await remote;
    expect(remoteLock.value).not.toBe(held.value);
    await remoteLock.release();
    const after = await again;
    expect(after.value).not.toBe(held.value);
    await after.release();
  });

  it('a renewal that misses the quorum falls back to a release: the next caller acquires through the nodes', async () => {
    const prefix = uniquePrefix('unrenewed');
    const redlock = make(prefix, { localHandoff: 1, nodeTimeout: 300 });
    const held = await redlock.acquire('sku');
    const [second] = queue(redlock, 1);
    const third = redlock.acquire('sku', {
      waitTimeout: 8000,
      retryDelay: 100,
      retryJitter: 0,
    });
    await sleep(50);
    expect(how(await held.release())).toBe('handed');
    const mine = await second;
    servers[1].freeze();
    servers[2].freeze();
    let result: ReleaseResult;
    try {
      // The streak ends; one node of three can renew, so the lock is
      // released instead, and only that node confirms.
      result = await mine.release();
    } finally {
      servers[1].thaw();
      servers[2].thaw();
    }
    expect(how(result)).toBe('nodes');
    expect(result.released).toBe(false);
    // The frozen nodes run the renewal, then the release, once thawed:
    // the key is free again and the next caller takes it with a value of
    // its own, on every node.
    const next = await third;
    expect(next.value).not.toBe(held.value);
    const values = await Promise.all(admin.map((c) => c.get(`${prefix}sku`)));
    expect(
      values.filter((v) => v === next.value).length,
    ).toBeGreaterThanOrEqual(2);
    expect(values).not.toContain(held.value);
    await next.release();
  });

  it('quit() right after a release that asked for a renewal waits for it, then releases on the nodes', async () => {
    const prefix = uniquePrefix('renew-quit');
    const redlock = make(prefix, { localHandoff: 1 });
    const first = await redlock.acquire('sku');
    const [next, last] = queue(redlock, 2);
    const lastOutcome = last.catch((error: Error) => error);
    await sleep(50);
    expect(how(await first.release())).toBe('handed');
    const current = await next;
    // The streak ends: the renewal leaves, and quit() runs in the same turn
    // (the caller it was for is told the instance is closing).
    const releasing = current.release();
    await redlock.quit();
    expect(await lastOutcome).toMatchObject({ reason: 'closed' });
    const result = await releasing;
    expect(how(result)).toBe('nodes');
    expect(result.released).toBe(true);
    // Nothing left on the nodes for a renewed lease to keep.
    expect(
      await Promise.all(admin.map((c) => c.exists(`${prefix}sku`))),
    ).toEqual(servers.map(() => 0));
  });

  it('localHandoff 0 turns the renewal off too: the next caller acquires through the nodes', async () => {
    const prefix = uniquePrefix('off');
    const redlock = make(prefix, { localHandoff: 0 });
    const held = await redlock.acquire('sku');
    const [next] = queue(redlock, 1);
    await sleep(50);
    const result = await held.release();
    expect(how(result)).toBe('nodes');
    expect(result.released).toBe(true);
    const lock = await next;
    expect(lock.value).not.toBe(held.value);
    await lock.release();
  });

  it(`after ${MAX_RENEWALS} renewals in a row the lock is released and acquired again, with a new value`, async () => {
    const prefix = uniquePrefix('bounded');
    const redlock = make(prefix, { localHandoff: 1 });
    let current = await redlock.acquire('sku');
    const first = current.value;
    const waiters = queue(redlock, 2 * (MAX_RENEWALS + 1));
    await sleep(50);
    const seen: string[] = [];
    for (const waiter of waiters) {
      seen.push(how(await current.release()));
      current = await waiter;
    }
    const expected: string[] = [];
    for (let i = 0; i < MAX_RENEWALS; i++) expected.push('handed', 'renewed');
    expected.push('handed', 'nodes');
    expect(seen).toEqual(expected);
    expect(current.value).not.toBe(first);
    await current.release();
  });
});
