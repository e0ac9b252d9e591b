import { afterAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock, RedlockConfigError, type Lock } from 'nestjs-redlock';
import {
  flushed,
  quorumUrls,
  settledTo,
  uniquePrefix,
} from '../utils/nodes.js';

/**
 * `inspect()` of a semaphore (`{ permits }`: each permit slot) and of a
 * read/write lock (`{ mode }`: the writer or the readers with their
 * leases, a waiting writer), on the quorum nodes; the mutex's answer is
 * the one it always was.
 */
describe('Redlock.inspect of semaphores and read/write locks', () => {
  const keyPrefix = uniquePrefix('insp-shape');
  const redlocks: Redlock[] = [];
  const make = () => {
    const r = new Redlock({
      clients: quorumUrls(),
      keyPrefix,
      logger: { warn: () => undefined },
    });
    redlocks.push(r);
    return r;
  };
  afterAll(() => Promise.all(redlocks.map((r) => r.quit())));

  it('tells each permit slot of a semaphore: who holds it, its lease per node, how many are taken and how many here', async () => {
    const [a, b] = [make(), make()];
    const mine = await a.acquire('psp', { permits: 3, ttl: 5000 });
    const theirs = await b.acquire('psp', { permits: 3, ttl: 8000 });
    await Promise.all([flushed(a), flushed(b)]);
    // On every node once each has answered (an acquire settles at a quorum).
    const holders = async () =>
      (await a.inspect('psp', { permits: 3 })).nodes.map((n) => n.holders);
    await settledTo(
      holders,
      quorumUrls().map(() => 2),
    );
    const seen = await a.inspect('psp', { permits: 3 });
    expect(seen).toMatchObject({
      resource: 'psp',
      key: `${keyPrefix}psp`,
      permits: 3,
      inUse: 3,
      held: 2,
      heldHere: 1,
    });
    // Every node answers; an acquire settles at a quorum, and a node it
    // reached late (or whose connection dropped the request on a loaded
    // machine) may hold neither permit: a quorum holds both.
    const quorum = Math.floor(quorumUrls().length / 2) + 1;
    expect(seen.nodes.every((n) => n.up)).toBe(true);
    expect(
      seen.nodes.filter((n) => n.permits === 3 && n.holders === 2).length,
    ).toBeGreaterThanOrEqual(quorum);
    expect(seen.slots.map((s) => s.resource)).toEqual([
      'psp#permit-0',
      'psp#permit-1',
      'psp#permit-2',
    ]);
    const slotOf = (lock: Lock) =>
      seen.slots.find((s) => s.resource === lock.resources[0])!;
    expect(slotOf(mine)).toMatchObject({
      key: mine.keys[0],
      held: true,
      holder: 'this-instance',
    });
    expect(mine.keys[0]).toBe(`${keyPrefix}${mine.resources[0]}`);
    expect(slotOf(theirs)).toMatchObject({ held: true, holder: 'other' });
    const holding = slotOf(theirs).nodes.filter(
      (n) => n.up && n.exists && n.holder === 'other',
    );
    expect(holding.length).toBeGreaterThanOrEqual(quorum);
    for (const node of holding) expect(node.ttlMs).toBeGreaterThan(5000);
    const free = seen.slots.filter((s) => !s.held);
    expect(free).toHaveLength(1);
    expect(free[0].nodes.every((n) => n.exists === false)).toBe(true);
    expect(JSON.stringify(seen)).not.toContain(mine.value);
    expect(JSON.stringify(seen)).not.toContain(theirs.value);
    // The other instance sees the same slots, from its side.
    expect(await b.inspect('psp', { permits: 3 })).toMatchObject({
      held: 2,
      heldHere: 1,
    });
    await Promise.all([mine.release(), theirs.release()]);
    const after = await a.inspect('psp', { permits: 3, timeoutMs: 500 });
    expect({ held: after.held, heldHere: after.heldHere }).toEqual({
      held: 0,
      heldHere: 0,
    });
    expect(after.inUse).toBeUndefined();
    // Read with another count than the resource is used with: the nodes
    // tell the count in use.
    const again = await b.acquire('psp', { permits: 3 });
    expect(await a.inspect('psp', { permits: 2 })).toMatchObject({
      permits: 2,
      inUse: 3,
    });
    await again.release();
  });

  it('tells the readers of a read/write lock with their leases, then a waiting writer, then the writer', async () => {
    const [a, b, c] = [make(), make(), make()];
    const reader = await a.acquire('doc', { mode: 'read', ttl: 4000 });
    const other = await b.acquire('doc', { mode: 'read', ttl: 8000 });
    await Promise.all([flushed(a), flushed(b)]);
    const read = await a.inspect('doc', { mode: 'read' });
    expect(read).toMatchObject({
      resource: 'doc',
      key: `${keyPrefix}doc`,
      held: true,
      mode: 'read',
      readers: 2,
      readersHere: 1,
    });
    expect(read.writer).toBeUndefined();
    expect(read.writerWaiting).toBeUndefined();
    for (const node of read.nodes) {
      expect(node).toMatchObject({ up: true, exists: true });
      expect(node.writer).toBeUndefined();
      // The shortest lease first: this instance's 4 s, then the other's 8 s.
      expect(node.readers!.map((r) => r.holder)).toEqual([
        'this-instance',
        'other',
      ]);
      const [first, second] = node.readers!.map((r) => r.ttlMs);
      expect(first).toBeGreaterThan(3000);
      expect(first).toBeLessThanOrEqual(4000);
      expect(second).toBeGreaterThan(7000);
      expect(second).toBeLessThanOrEqual(8000);
      // The key lives as long as the last reader.
      expect(node.ttlMs).toBeGreaterThan(7000);
    }
    // A writer refused by the readers waits, its intent on every node.
    const writing = c.acquire('doc', {
      mode: 'write',
      waitTimeout: 10_000,
      retryDelay: 50,
      retryJitter: 0,
    });
    await sleep(150);
    await flushed(c);
    const waiting = await a.inspect('doc', { mode: 'write' });
    expect(waiting).toMatchObject({
      mode: 'read',
      readers: 2,
      writerWaiting: 'other',
    });
    for (const node of waiting.nodes) {
      expect(node.writerWaiting?.holder).toBe('other');
      expect(node.writerWaiting?.ttlMs).toBeGreaterThan(0);
    }
    await Promise.all([reader.release(), other.release()]);
    const writer = await writing;
    await flushed(c);
    const written = await c.inspect('doc', { mode: 'read' });
    expect(written).toMatchObject({
      held: true,
      mode: 'write',
      writer: 'this-instance',
      readers: 0,
      readersHere: 0,
    });
    expect(written.writerWaiting).toBeUndefined();
    // A quorum holds the writer (a node the acquire reached late may hold
    // nothing yet); no node holds readers.
    const holding = written.nodes.filter((node) => node.exists);
    expect(holding.length).toBeGreaterThan(written.nodes.length / 2);
    for (const node of holding)
      expect(node).toMatchObject({ exists: true, writer: 'this-instance' });
    for (const node of written.nodes) expect(node.readers).toBeUndefined();
    expect(await a.inspect('doc', { mode: 'write' })).toMatchObject({
      writer: 'other',
    });
    expect(JSON.stringify([read, waiting, written])).not.toMatch(
      new RegExp(
        [reader, other, writer]
          .map((l) => l.value.replace(/-/g, '\\-'))
          .join('|'),
      ),
    );
    await writer.release();
    await flushed(c);
    const free = await a.inspect('doc', { mode: 'read' });
    expect(free).toMatchObject({ held: false, readers: 0, readersHere: 0 });
    expect(free.mode).toBeUndefined();
    expect(free.nodes.every((n) => n.exists === false)).toBe(true);
  });

  it('leaves out readers whose lease ran out on the node, though still in its set', async () => {
    const a = make();
    await a.acquire('brief', { mode: 'read', ttl: 200 });
    const lasting = await a.acquire('brief', { mode: 'read', ttl: 5000 });
    await flushed(a);
    await sleep(300);
    const seen = await a.inspect('brief', { mode: 'read' });
    expect(seen).toMatchObject({ held: true, readers: 1, readersHere: 1 });
    for (const node of seen.nodes) {
      expect(node.readers).toHaveLength(1);
      expect(node.readers![0].ttlMs).toBeGreaterThan(4000);
    }
    await lasting.release();
  });

  it('answers for a mutex as before, with a timeout or options', async () => {
    const a = make();
    const lock = await a.acquire('plain', { ttl: 5000 });
    // Every node has the key (the acquire settled at a quorum).
    await flushed(a);
    const answers = await Promise.all([
      a.inspect('plain'),
      a.inspect('plain', 500),
      a.inspect('plain', { timeoutMs: 500 }),
    ]);
    for (const seen of answers) {
      expect(Object.keys(seen).sort()).toEqual(
        ['held', 'holder', 'key', 'nodes', 'resource'].sort(),
      );
      expect(seen).toMatchObject({ held: true, holder: 'this-instance' });
      for (const node of seen.nodes)
        expect(Object.keys(node).sort()).toEqual(
          ['exists', 'holder', 'node', 'queued', 'ttlMs', 'up'].sort(),
        );
    }
    await lock.release();
  });

  it('names a bad option before any Redis call', async () => {
    const a = make();
    const field = (options: object) =>
      a.inspect('x', options).then(
        () => undefined,
        (e: unknown) => {
          expect(e).toBeInstanceOf(RedlockConfigError);
          return (e as RedlockConfigError).field;
        },
      );
    expect(await field({ permits: 0 })).toBe('options.permits');
    expect(await field({ permits: 1025 })).toBe('options.permits');
    expect(await field({ mode: 'reader' })).toBe('options.mode');
    expect(await field({ permits: 2, mode: 'read' })).toBe('options.mode');
    expect(await field({ timeoutMs: 0 })).toBe('options.timeoutMs');
    expect(await field({ timeout: 10 })).toBe('options.timeout');
    await expect(a.inspect('', { permits: 2 })).rejects.toMatchObject({
      field: 'resource',
    });
    await expect(a.inspect('x', 0)).rejects.toMatchObject({
      field: 'timeoutMs',
    });
  });
});
