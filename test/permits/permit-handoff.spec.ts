import { afterAll, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Redlock, type Lock } from 'nestjs-redlock';
import { inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';
import {
  closeAll,
  flushed,
  parked,
  settledTo,
  watchCommands,
} from '../utils/nodes.js';

// A permit released while another caller of the same process waits for
// it: passed on as it stands (no round trip, the slot never frees on the
// nodes), within the limits of the mutex's in-process handoff; and a
// permit freed while a waiter's attempt was out wakes that waiter at once.
describe('semaphore: a permit passed within the process', () => {
  const keyPrefix = uniquePrefix('semhand');
  const admin = inspect(quorumUrls());
  const redlocks: Redlock[] = [];
  const make = (localHandoff?: number) => {
    const r = new Redlock({ clients: quorumUrls(), keyPrefix, localHandoff });
    redlocks.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });

  /** The slot keys of `resource` and their values, node by node. */
  const slotsOn = (resource: string) =>
    Promise.all(
      admin.map(async (c) => {
        const keys = (await c.keys(`${keyPrefix}${resource}#permit-*`)).sort();
        return Promise.all(keys.map(async (k) => [k, await c.get(k)]));
      }),
    );

  // A wait no test below should need: only a wake-up ends it in time.
  const patient = {
    permits: 1,
    waitTimeout: 30_000,
    retryDelay: 20_000,
    retryJitter: 0,
  };

  it('hands the permit to the waiting caller as it stands: no node asked, the same key and value on every node', async () => {
    const r = make();
    const holder = await r.acquire('passed', { permits: 1 });
    // On every node once each has answered (an acquire settles at a quorum).
    await settledTo(
      async () => (await slotsOn('passed')).map((keys) => keys.length),
      admin.map(() => 1),
    );
    const before = await slotsOn('passed');
    expect(before[0]).toEqual([
      [`${keyPrefix}passed#permit-0`, expect.any(String)],
    ]);
    const retries = r.stats.retries;
    const waiting = r.acquire('passed', patient);
    expect(await parked(r, retries)).toBeGreaterThanOrEqual(retries + 1);
    const told: unknown[] = [];
    const onHandover = (message: unknown) => told.push(message);
    subscribe('nestjs-redlock:handover', onHandover);
    const result = await holder
      .release()
      .finally(() => unsubscribe('nestjs-redlock:handover', onHandover));
    // Told as a mutex's lease passed on, with the permit count.
    expect(told).toEqual([
      {
        resources: ['passed#permit-0'],
        valueHash: expect.any(String),
        via: 'queue',
        permits: 1,
      },
    ]);
    expect(result).toMatchObject({
      released: true,
      handedOver: true,
      nodes: [],
    });
    const next: Lock = await waiting;
    expect(next.isHeld).toBe(true);
    expect(next.resources).toEqual(['passed#permit-0']);
    expect(next.shape).toEqual({ permits: 1 });
    // The slot never freed: the same value on every node, now the waiter's.
    await flushed(r);
    expect(await slotsOn('passed')).toEqual(before);
    expect((await next.release()).handedOver).toBeUndefined();
    const none = admin.map(() => []);
    expect(await settledTo(() => slotsOn('passed'), none)).toEqual(none);
  });

  it('passes a permit `localHandoff` times in a row, then gives it back to the nodes', async () => {
    const r = make(2);
    let lock = await r.acquire('streak', { permits: 1 });
    const retries = r.stats.retries;
    const waiting = [1, 2, 3].map(() => r.acquire('streak', patient));
    expect(await parked(r, retries, 3)).toBeGreaterThanOrEqual(retries + 3);
    const passed: (boolean | undefined)[] = [];
    for (const next of waiting) {
      passed.push((await lock.release()).handedOver);
      lock = await next;
    }
    // The third waiter was woken by the release and asked the nodes.
    expect(passed).toEqual([true, true, undefined]);
    await lock.release();
  });

  it('keeps a contended permit released while nobody waits until the loop turns, for a caller that asks again at once', async () => {
    const r = make();
    // A name of its own per run (a retried run must not meet the last one's).
    const name = `linger-${Math.random().toString(36).slice(2, 8)}`;
    const holder = await r.acquire(name, { permits: 1 });
    const retries = r.stats.retries;
    const waiting = r.acquire(name, patient);
    expect(await parked(r, retries)).toBeGreaterThanOrEqual(retries + 1);
    expect((await holder.release()).handedOver).toBe(true);
    // A lock its caller waited for, released while nobody of the process
    // waits: kept for whoever asks before the event loop turns.
    const first = await waiting;
    await flushed(r);
    const before = await slotsOn(name);
    // The commands this instance sends (other test files share the nodes).
    let sent = 0;
    const stops = r.nodes.map((node) =>
      watchCommands(node.client, () => {
        sent++;
      }),
    );
    const told: unknown[] = [];
    const onHandover = (message: unknown) => told.push(message);
    subscribe('nestjs-redlock:handover', onHandover);
    const result = await first.release();
    const again = await r
      .acquire(name, { permits: 1 })
      .finally(() => unsubscribe('nestjs-redlock:handover', onHandover));
    expect(result).toMatchObject({ released: true, deferred: true, nodes: [] });
    expect(told).toEqual([
      {
        resources: [`${name}#permit-0`],
        valueHash: expect.any(String),
        via: 'lingering',
        permits: 1,
      },
    ]);
    // The same lease, and no node asked in between (the release was never
    // sent): the slot holds the same value on every node.
    expect(again.value).toBe(first.value);
    expect(again.isHeld).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    for (const stop of stops) stop();
    expect(sent).toBe(0);
    await flushed(r);
    expect(await slotsOn(name)).toEqual(before);
    // Nobody asks this time: the release goes to the nodes as the loop turns.
    expect((await again.release()).deferred).toBe(true);
    const none = admin.map(() => []);
    expect(await settledTo(() => slotsOn(name), none)).toEqual(none);
  });

  it('releases an uncontended permit on the nodes at once, and sends a kept release at quit()', async () => {
    const r = make();
    const alone = await r.acquire('at-once', { permits: 1 });
    const result = await alone.release();
    expect(result.deferred).toBeUndefined();
    expect(result.released).toBe(true);
    expect(result.nodes.length).toBe(admin.length);
    // A kept release: quit() sends it before it closes the connections.
    const holder = await r.acquire('at-once', { permits: 1 });
    const retries = r.stats.retries;
    const waiting = r.acquire('at-once', patient);
    expect(await parked(r, retries)).toBeGreaterThanOrEqual(retries + 1);
    await holder.release();
    const kept = await waiting;
    expect((await kept.release()).deferred).toBe(true);
    await r.quit();
    expect(await slotsOn('at-once')).toEqual(admin.map(() => []));
  });

  it('never passes a permit to a waiter whose call it does not fit (fencing, another lease, several resources)', async () => {
    const r = make();
    for (const other of [
      { fencing: true },
      { ttl: 20_000 },
      { resources: ['fit', 'fit-2'] },
    ]) {
      const holder = await r.acquire('fit', { permits: 1 });
      const retries = r.stats.retries;
      const { resources = 'fit', ...options } = other;
      const waiting = r.acquire(resources, { ...patient, ...options });
      expect(await parked(r, retries)).toBeGreaterThanOrEqual(retries + 1);
      const result = await holder.release();
      expect(result.handedOver).toBeUndefined();
      expect(result.released).toBe(true);
      // Woken by the release, it got a permit from the nodes.
      const lock = await waiting;
      expect(lock.isHeld).toBe(true);
      await lock.release();
    }
  });

  it('wakes a waiter whose attempt was out when the permit freed, instead of leaving it to its next poll', async () => {
    const r = make();
    const elsewhere = await make().acquire('missed', { permits: 2 });
    const holder = await r.acquire('missed', { permits: 2 });
    // The waiter tries the one slot this process does not hold (held
    // elsewhere); the release, sent right after on the same connections,
    // frees the other while that attempt's refusal is on its way: no
    // waiter parked to wake, nor to pass the permit to.
    const waiting = r.acquire('missed', { ...patient, permits: 2 });
    const released = holder.release();
    expect((await released).handedOver).toBeUndefined();
    // Without the wake-up the waiter would sleep its 20 s poll.
    const lock = await Promise.race([
      waiting,
      new Promise<'slept'>((resolve) =>
        setTimeout(() => resolve('slept'), 10_000).unref(),
      ),
    ]);
    expect(lock).not.toBe('slept');
    expect(r.stats.retries).toBeGreaterThanOrEqual(1);
    await (lock as Lock).release();
    await elsewhere.release();
  });
});
