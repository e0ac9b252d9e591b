import {
  afterAll,
  afterEach,
  beforeAll,
  describe,
  expect,
  it,
} from '@jest/globals';
import {
  LockExtendError,
  Redlock,
  type Lock,
  type RedlockOptions,
} from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { flushed } from '../utils/nodes.js';

// recreateOnExtend on five servers of this spec, restarted empty
// (persistence off) while a lock is held through them.
describe('recreateOnExtend: an extension puts back a key a node lost, only while a quorum of the others holds the lock', () => {
  const LEASE = 1500;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let servers: RedisServer[];
  const redlocks: Redlock[] = [];
  const make = (options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: 'rc:',
      metaPrefix: 'rc-meta:',
      ttl: LEASE,
      // Generous: a loaded machine must not turn a slow answer into a
      // timeout the tests would read as a lost key.
      nodeTimeout: 400,
      logger: { warn: () => undefined },
      ...options,
    });
    redlocks.push(redlock);
    return redlock;
  };
  /** Runs `fn` on a fresh client of node `i` (one that never saw a restart). */
  const onNode = async <T>(
    i: number,
    fn: (c: ReturnType<RedisServer['client']>) => Promise<T>,
  ) => {
    const client = servers[i].client();
    try {
      return await fn(client);
    } finally {
      await client.quit();
    }
  };
  const values = (key: string) =>
    Promise.all(servers.map((_, i) => onNode(i, (c) => c.get(key))));
  /** Waits, bounded, until `check()` resolves true; returns its last answer. */
  const until = async (check: () => Promise<boolean> | boolean, ms: number) => {
    const end = Date.now() + ms;
    while (!(await check()) && Date.now() < end) await sleep(20);
    return check();
  };
  /** Restarts node `i` empty and waits until `redlock` is connected to it again. */
  const restartEmpty = async (redlock: Redlock, i: number) => {
    await servers[i].restart();
    expect(
      await until(() => redlock.nodes[i].client.status === 'ready', 5000),
    ).toBe(true);
  };

  beforeAll(async () => {
    servers = await startServers(5);
  });
  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((r) => r.quit()));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  /** A lock kept by the watchdog, and whether (and why) it was lost. */
  async function watched(redlock: Redlock, resource: string) {
    const lock = await redlock.acquire(resource);
    const state = { lost: undefined as string | undefined };
    const stop = redlock.watch(lock, {
      onLost: (e) => (state.lost = e.message),
    });
    return { lock, state, stop };
  }

  it('with it, a watched lock survives rolling restarts of all five nodes, each empty, each getting the key back', async () => {
    const redlock = make({ recreateOnExtend: true });
    await redlock.ready();
    const { lock, state, stop } = await watched(redlock, 'rolling');
    for (let i = 0; i < servers.length; i++) {
      await restartEmpty(redlock, i);
      expect(await onNode(i, (c) => c.exists('rc:rolling'))).toBe(0);
      // The next watchdog tick (a third into the lease) puts it back.
      expect(
        await until(
          async () =>
            (await onNode(i, (c) => c.get('rc:rolling'))) === lock.value,
          3 * LEASE,
        ),
      ).toBe(true);
      const pttl = await onNode(i, (c) => c.pttl('rc:rolling'));
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(LEASE);
      expect(state.lost).toBeUndefined();
    }
    expect(lock.isHeld).toBe(true);
    expect(await values('rc:rolling')).toEqual(Array(5).fill(lock.value));
    // Twice round: any number of rolling restarts.
    for (let i = 0; i < servers.length; i++) {
      await restartEmpty(redlock, i);
      expect(
        await until(
          async () =>
            (await onNode(i, (c) => c.get('rc:rolling'))) === lock.value,
          3 * LEASE,
        ),
      ).toBe(true);
    }
    expect(state.lost).toBeUndefined();
    expect(lock.isHeld).toBe(true);
    stop();
    await lock.release();
    await flushed(redlock);
    expect(await values('rc:rolling')).toEqual(Array(5).fill(null));
  });

  it('without it (the default), the same lock is lost at the first extension after the third restart', async () => {
    const redlock = make();
    await redlock.ready();
    const { lock, state, stop } = await watched(redlock, 'rolling-plain');
    /** Two more watchdog ticks begin: the one after the restart has ended. */
    const aTickLater = async () => {
      const ticks = redlock.keepAlive.ticks;
      return until(() => redlock.keepAlive.ticks >= ticks + 2, 3 * LEASE);
    };
    for (let i = 0; i < 2; i++) {
      await restartEmpty(redlock, i);
      expect(await aTickLater()).toBe(true);
      expect(await onNode(i, (c) => c.exists('rc:rolling-plain'))).toBe(0);
      expect(state.lost).toBeUndefined();
      expect(lock.isHeld).toBe(true);
    }
    await restartEmpty(redlock, 2);
    expect(await until(() => state.lost !== undefined, 3 * LEASE)).toBe(true);
    expect(state.lost).toContain('only 2 of 3');
    expect(lock.isHeld).toBe(false);
    stop();
  });

  it('never writes over another value: a node where another value sits keeps it, its lease untouched', async () => {
    const redlock = make({ recreateOnExtend: true });
    await redlock.ready();
    const lock = await redlock.acquire('taken-here');
    await flushed(redlock);
    // Node 2 lost our key and another value sits there now.
    await onNode(2, (c) =>
      c.set('rc:taken-here', 'someone-else', 'PX', 60_000),
    );
    await lock.extend();
    await flushed(redlock);
    expect(await values('rc:taken-here')).toEqual([
      lock.value,
      lock.value,
      'someone-else',
      lock.value,
      lock.value,
    ]);
    expect(await onNode(2, (c) => c.pttl('rc:taken-here'))).toBeGreaterThan(
      50_000,
    );
    await lock.release();
    await flushed(redlock);
    expect(await values('rc:taken-here')).toEqual([
      null,
      null,
      'someone-else',
      null,
      null,
    ]);
    await onNode(2, (c) => c.del('rc:taken-here'));
  });

  it('a lock of two keys is put back all or nothing: not where one key holds another value', async () => {
    const redlock = make({ recreateOnExtend: true });
    await redlock.ready();
    const lock = await redlock.acquire(['pair:a', 'pair:b']);
    await flushed(redlock);
    // Node 3: key a lost, key b another's. Node 4: key a lost only.
    await onNode(3, async (c) => {
      await c.del('rc:pair:a');
      await c.set('rc:pair:b', 'someone-else', 'PX', 60_000);
    });
    await onNode(4, (c) => c.del('rc:pair:a'));
    await lock.extend();
    await flushed(redlock);
    expect(await values('rc:pair:a')).toEqual([
      lock.value,
      lock.value,
      lock.value,
      null,
      lock.value,
    ]);
    expect(await values('rc:pair:b')).toEqual([
      lock.value,
      lock.value,
      lock.value,
      'someone-else',
      lock.value,
    ]);
    await lock.release();
    await onNode(3, (c) => c.del('rc:pair:b'));
  });

  it('no put-back without a quorum of the others: an extension that fails re-creates nothing', async () => {
    const redlock = make({ recreateOnExtend: true });
    await redlock.ready();
    const lock: Lock = await redlock.acquire('minority');
    // Every node has its answer first (the acquire settles at a quorum: on
    // a busy machine the others' grants could land after the deletes).
    await flushed(redlock);
    // Three of five lost it: only two hold it, below the quorum.
    for (const i of [0, 1, 2]) await onNode(i, (c) => c.del('rc:minority'));
    const failed = await lock.extend().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(LockExtendError);
    expect(lock.isLost).toBe(true);
    await flushed(redlock);
    // The lost lock was released on the two; none of the three got it back.
    expect(await values('rc:minority')).toEqual(Array(5).fill(null));
  });

  it('off (the default), an extension leaves a lost key lost', async () => {
    const redlock = make();
    await redlock.ready();
    const lock = await redlock.acquire('plain');
    await flushed(redlock);
    await onNode(1, (c) => c.del('rc:plain'));
    await lock.extend();
    await flushed(redlock);
    expect(await values('rc:plain')).toEqual([
      lock.value,
      null,
      lock.value,
      lock.value,
      lock.value,
    ]);
    await lock.release();
  });
});
