import { afterEach, describe, expect, it } from '@jest/globals';
import {
  LockExtendError,
  LockNotAcquiredError,
  Redlock,
  type RedlockOptions,
} from 'nestjs-redlock';
import type { ClockMonitor } from '../../lib/core/nodes/clock-monitor.js';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';

// The node-clock monitor on the five shared nodes. It reads their real
// TIME; Redis cannot be made to move its clock (DEBUG cannot, and
// libfaketime crashes this redis-server build), so where a node must look
// fast the test hands the monitor's detector a made-up reading, through
// the same entry point (`record`) the monitor's own readings take. The
// rate logic itself is tested in test/unit/drift-detector.spec.ts.
describe('clockMonitor: a node whose clock runs fast does not count', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const redlocks: Redlock[] = [];
  const make = (options: Partial<RedlockOptions>, warnings: string[] = []) => {
    const redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: uniquePrefix('clock'),
      // Generous: a loaded machine must not turn a slow answer into a
      // timeout the tests would read as something else.
      nodeTimeout: 500,
      logger: { warn: (m) => warnings.push(m) },
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };
  const monitorOf = (redlock: Redlock): ClockMonitor =>
    redlock.standing.clockMonitor;
  /** Waits, bounded, until `check()` holds; returns whether it does. */
  const until = async (check: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !check() && Date.now() < end;)
      await sleep(10);
    return check();
  };
  /**
   * A made-up reading of node `i`, `ahead` ms ahead of this host's wall
   * clock (the nodes run on this host, so their real readings sit at
   * about 0): what the monitor would read after the node's clock jumped.
   */
  const jumped = (redlock: Redlock, i: number, ahead: number) => {
    const now = redlock.clock.now();
    return monitorOf(redlock).record(i, {
      sentAt: now,
      answeredAt: now,
      nodeTime: Date.now() + ahead,
    });
  };

  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((r) => r.quit()));
  });

  it('reads every node’s real TIME and holds out none of them over 40 readings each', async () => {
    const warnings: string[] = [];
    const redlock = make({ clockMonitor: { interval: 20 } }, warnings);
    await redlock.ready();
    const monitor = monitorOf(redlock);
    const detectors = redlock.nodes.map((_, i) => monitor.detector(i));
    expect(
      await until(() => detectors.every((d) => (d?.samples ?? 0) >= 40), 5000),
    ).toBe(true);
    for (const [i, detector] of detectors.entries()) {
      expect(detector?.excluded).toBe(false);
      expect(monitor.suspect(i)).toBe(false);
      // The same host's clock, read through TIME: no certain gain at all.
      expect(detector?.lastRate).toBeLessThan(0.01);
    }
    expect(warnings).toEqual([]);
    const health = await redlock.health();
    expect(health.healthy).toBe(true);
    expect(health.nodes.some((n) => n.clockSuspect)).toBe(false);
    const lock = await redlock.acquire('steady');
    await lock.extend();
    await lock.release();
  });

  it('a held-out node’s grants do not count and are taken back, its extensions do not count, health() says so, and it counts again after the exclusion', async () => {
    const warnings: string[] = [];
    const redlock = make(
      { clockMonitor: { interval: 50, exclusion: 1500 } },
      warnings,
    );
    await redlock.ready();
    const monitor = monitorOf(redlock);
    // Every node read at least once, so the made-up reading has a real
    // one before it to be compared with.
    expect(
      await until(
        () =>
          redlock.nodes.every(
            (_, i) => (monitor.detector(i)?.samples ?? 0) > 1,
          ),
        3000,
      ),
    ).toBe(true);
    const held = await redlock.acquire('held-before');
    // Nodes 0, 1 and 2 jump 500 ms ahead.
    expect([0, 1, 2].map((i) => jumped(redlock, i, 500))).toEqual([
      'excluded',
      'excluded',
      'excluded',
    ]);
    expect(warnings.filter((w) => w.includes('gained'))).toHaveLength(3);

    // An acquire: the two nodes that count cannot make a quorum, and
    // what the held-out nodes granted is taken back.
    const refused = await redlock
      .tryAcquire('after-jump')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    const outcomes = (refused as LockNotAcquiredError).nodes.map(
      (n) => n.outcome,
    );
    expect(outcomes.slice(0, 3)).toEqual([
      'quarantined',
      'quarantined',
      'quarantined',
    ]);
    await flushed(redlock);
    const admin = inspect(quorumUrls());
    try {
      const key = redlock.keyPrefix + 'after-jump';
      expect(await Promise.all(admin.map((c) => c.exists(key)))).toEqual([
        0, 0, 0, 0, 0,
      ]);
    } finally {
      await closeAll(admin);
    }
    // The lock taken before: its extension counts only nodes 3 and 4.
    const extended = await held.extend().catch((e: unknown) => e);
    expect(extended).toBeInstanceOf(LockExtendError);
    expect(held.isLost).toBe(true);

    const health = await redlock.health();
    expect(health).toMatchObject({ healthy: false, up: 5 });
    expect(health.nodes.map((n) => n.clockSuspect ?? false)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(health.nodes.some((n) => n.quarantined)).toBe(false);

    // The real readings that follow keep time: back after the exclusion,
    // with one warning each.
    expect(
      await until(() => [0, 1, 2].every((i) => monitor.counts(i)), 4000),
    ).toBe(true);
    expect(warnings.filter((w) => w.includes('kept time again'))).toHaveLength(
      3,
    );
    expect(warnings).toHaveLength(6);
    expect((await redlock.health()).healthy).toBe(true);
    const lock = await redlock.acquire('after-jump');
    await lock.release();
  });

  it('two held-out nodes of five leave a quorum: locks are taken and extended on the other three', async () => {
    const redlock = make({ clockMonitor: { interval: 50, exclusion: 60_000 } });
    await redlock.ready();
    const monitor = monitorOf(redlock);
    expect(
      await until(
        () =>
          (monitor.detector(3)?.samples ?? 0) > 1 &&
          (monitor.detector(4)?.samples ?? 0) > 1,
        3000,
      ),
    ).toBe(true);
    jumped(redlock, 3, 1000);
    jumped(redlock, 4, 1000);
    const lock = await redlock.acquire('three-count');
    await lock.extend();
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('reads nothing when off; stops reading at quit(), and its timer never holds the process', async () => {
    const off = make({});
    expect(monitorOf(off).running).toBe(false);
    expect(monitorOf(off).detector(0)).toBeUndefined();
    expect(monitorOf(off).counts(0)).toBe(true);

    const redlock = make({ clockMonitor: { interval: 20 } });
    const monitor = monitorOf(redlock);
    const timer = (monitor as unknown as { timer?: NodeJS.Timeout }).timer;
    expect(timer?.hasRef()).toBe(false);
    await redlock.ready();
    expect(
      await until(() => (monitor.detector(0)?.samples ?? 0) > 2, 3000),
    ).toBe(true);
    await redlock.quit();
    expect(monitor.running).toBe(false);
    const after = redlock.nodes.map((_, i) => monitor.detector(i)?.samples);
    await sleep(150);
    expect(redlock.nodes.map((_, i) => monitor.detector(i)?.samples)).toEqual(
      after,
    );
  });
});
