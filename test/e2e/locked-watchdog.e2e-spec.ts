import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { LockLostError } from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { OrdersService } from '../fixtures/orders.fixture.js';
import { sleep, Tracker } from '../fixtures/tracker.js';
import { closeAll, inspect, quorumUrls } from '../utils/nodes.js';

describe('@Locked watchdog and lost locks (five real Redis nodes)', () => {
  let t: TestApp;
  let svc: OrdersService;
  let nodes: Redis[];
  const warnings: string[] = [];

  beforeAll(async () => {
    t = await createApp(
      { providers: [Tracker, OrdersService] },
      { logger: { warn: (m: string) => void warnings.push(m) } },
    );
    svc = t.app.get(OrdersService);
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await t.close();
    await closeAll(nodes);
  });

  it('keeps the lock of a method running 4x its ttl (a second acquirer fails throughout)', async () => {
    // long() has ttl 800 ms and runs 3200 ms (a lease a starved process
    // still renews: 300 ms was lost once under a CI run's load).
    const running = svc.long('w1', 3200);
    let done = false;
    const settled = running.finally(() => {
      done = true;
    });
    // Probes start once the method holds the lock (a quorum has its key):
    // on a busy machine the call may take longer than a probe's delay to
    // get it, and a probe before it would take the lock itself.
    const key = t.prefix + 'long:w1';
    const held = async () =>
      (await Promise.all(nodes.map((n) => n.exists(key)))).filter(Boolean)
        .length >
      nodes.length / 2;
    const until = performance.now() + 5000;
    while (!(await held()) && performance.now() < until) await sleep(10);
    const heldAt = performance.now();
    let lastProbe = heldAt;
    // Every probe made while the method ran (beginning and ending before
    // it returned) is refused; a lease of 800 ms is kept for 4 of them.
    const refused: boolean[] = [];
    while (!done) {
      await sleep(200);
      if (done) break;
      const probe = await t.other.tryAcquire('long:w1');
      if (done) {
        await probe?.release();
        break;
      }
      refused.push(probe === null);
      lastProbe = performance.now();
      await probe?.release();
    }
    expect(await settled).toBe(3200);
    expect(refused.length).toBeGreaterThanOrEqual(3);
    expect(refused.every(Boolean)).toBe(true);
    // Refused still two leases after the method took the lock: extended.
    expect(lastProbe - heldAt).toBeGreaterThan(1600);
    const next = await t.other.tryAcquire('long:w1');
    expect(next).not.toBeNull();
    await next!.release();
  });

  const deleteOnQuorum = async (resource: string) => {
    await Promise.all(nodes.slice(0, 3).map((n) => n.del(t.prefix + resource)));
    return performance.now();
  };

  it('aborts lock.signal within about one extension interval when the keys vanish from a quorum, then rejects with LockLostError carrying the result', async () => {
    warnings.length = 0;
    const call = svc.untilLost('l1').catch((e: unknown) => e);
    await sleep(250);
    const deletedAt = await deleteOnQuorum('lost:l1');
    const error = await call;
    expect(error).toBeInstanceOf(LockLostError);
    const lost = error as LockLostError;
    expect(lost.settled).toBe('fulfilled');
    const abortedAt = Number(/at ([\d.]+)$/.exec(lost.result as string)![1]);
    // ttl 600 ms: extensions every 200 ms; allow one interval plus node time and slack.
    expect(abortedAt - deletedAt).toBeLessThan(200 + 250);
    expect(lost.resources).toEqual(['lost:l1']);
    expect(warnings.some((w) => w.includes('Lock on "lost:l1" was lost'))).toBe(
      true,
    );
  });

  it("returns the method's result with onLockLost: 'ignore'", async () => {
    const call = svc.untilLostIgnored('l2');
    await sleep(250);
    await deleteOnQuorum('lost:l2');
    await expect(call).resolves.toBe('ignored l2');
  });
});
