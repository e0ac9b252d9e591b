import { describe, expect, it } from '@jest/globals';
import { LockLostError } from 'nestjs-redlock';
import { InMemoryRedlock, TestClock } from 'nestjs-redlock/testing';

// What only the in-memory lock offers for semaphores and read/write locks:
// leases on the test clock, `holdersOf` to count holders, `loseLock` of a
// permit or of readers. The semantics both locks share are in the
// contract (test/contract/lock-contract.ts).
describe('InMemoryRedlock: semaphores and read/write locks on a test clock', () => {
  const make = () => {
    const clock = new TestClock();
    return { clock, memory: new InMemoryRedlock({ clock }) };
  };

  it('holdersOf counts the permits held, the readers, or the writer', async () => {
    const { memory } = make();
    const permits = await Promise.all(
      [0, 1, 2].map(() => memory.acquire('psp', { permits: 3 })),
    );
    expect(memory.holdersOf('psp')).toHaveLength(3);
    expect(memory.holderOf('psp#permit-1')).toBe(permits[1]);
    // A resource whose name starts alike is another resource.
    const other = await memory.acquire('psp2', { permits: 3 });
    expect(memory.holdersOf('psp')).toHaveLength(3);
    const readers = await Promise.all(
      [0, 1].map(() => memory.acquire('cat', { mode: 'read' })),
    );
    expect(memory.holdersOf('cat')).toEqual(readers);
    await Promise.all(readers.map((r) => r.release()));
    const writer = await memory.acquire('cat', { mode: 'write' });
    expect(memory.holdersOf('cat')).toEqual([writer]);
    expect(memory.holderOf('cat')).toBe(writer);
    await Promise.all([...permits, other, writer].map((l) => l.release()));
    expect(memory.holdersOf('psp')).toEqual([]);
  });

  it('permits and readers expire on the test clock unless extended', async () => {
    const { clock, memory } = make();
    await memory.acquire('psp', { permits: 1, ttl: 1000 });
    const reader = await memory.acquire('cat', { mode: 'read', ttl: 1000 });
    expect(await memory.tryAcquire('psp', { permits: 1 })).toBeNull();
    expect(await memory.tryAcquire('cat', { mode: 'write' })).toBeNull();
    await clock.advance(600);
    await reader.extend();
    await clock.advance(600);
    // The permit ran out; the reader was extended.
    expect(await memory.tryAcquire('psp', { permits: 1 })).not.toBeNull();
    expect(await memory.tryAcquire('cat', { mode: 'write' })).toBeNull();
    await clock.advance(500);
    expect(await memory.tryAcquire('cat', { mode: 'write' })).not.toBeNull();
  });

  it('a waiter for a full semaphore gets the permit when the lease ends, on the clock', async () => {
    const { clock, memory } = make();
    await memory.acquire('psp', { permits: 1, ttl: 2000 });
    const waiting = memory.acquire('psp', { permits: 1, waitTimeout: 5000 });
    await clock.advance(1999);
    expect(memory.holdersOf('psp')).toHaveLength(1);
    await clock.advance(2);
    expect((await waiting).resources).toEqual(['psp#permit-0']);
  });

  it('loseLock loses one permit by its slot, every reader by the resource', async () => {
    const { memory } = make();
    const permits = await Promise.all(
      [0, 1].map(() => memory.acquire('psp', { permits: 2 })),
    );
    expect(memory.loseLock(permits[0].resources[0])).toBe(true);
    expect(permits[0].signal.reason).toBeInstanceOf(LockLostError);
    expect(permits[1].isHeld).toBe(true);
    const readers = await Promise.all(
      [0, 1].map(() => memory.acquire('cat', { mode: 'read' })),
    );
    expect(memory.loseLock('cat')).toBe(true);
    expect(readers.every((r) => r.signal.aborted)).toBe(true);
    expect(await memory.tryAcquire('cat', { mode: 'write' })).not.toBeNull();
  });

  it('inspect() shows a resource held by readers, with the last reader lease', async () => {
    const { memory } = make();
    await memory.acquire('cat', { mode: 'read', ttl: 1000 });
    await memory.acquire('cat', { mode: 'read', ttl: 3000 });
    const seen = await memory.inspect('cat');
    expect(seen.held).toBe(true);
    expect(seen.nodes[0]).toMatchObject({ exists: true, ttlMs: 3000 });
  });
});
