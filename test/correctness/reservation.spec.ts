import { describe, expect, it } from '@jest/globals';
import { LockNotAcquiredError, Redlock, type Lock } from 'nestjs-redlock';
import {
  flushed,
  scriptCalls,
  SLOW_RETRY,
  uniquePrefix,
} from '../utils/nodes.js';
import { COUNTING, ownNodes } from '../utils/own-nodes.js';

// A release that hands a contended key on queues its process again in the
// same call; the process's next acquire adopts that place instead of
// asking. Own servers: the tests count script calls per node.
describe('queue places reserved by a release', () => {
  const own = ownNodes(3, COUNTING);
  const { servers, admin } = own;
  const make = own.prefixed;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Members of the key's wait queue on every node. */
  const queues = (prefix: string, resource: string) =>
    Promise.all(
      admin.map((c) => c.zrange(`redlock:q:${prefix}${resource}`, '0', '-1')),
    );

  /** Per node, whether the key of `resource` exists (1) or not (0). */
  const keysOn = (prefix: string, resource: string) =>
    Promise.all(admin.map((c) => c.exists(`${prefix}${resource}`)));
  const nowhere = () => servers.map(() => 0);

  /**
   * `lock` (of `holder`) is the only place left in the queues of `sku`;
   * once it is released, no key is left: a place left behind would have
   * been given the key, for 10 s.
   */
  const expectOnlyHolderQueued = async (
    prefix: string,
    holder: Redlock,
    lock: Lock,
  ) => {
    expect(await queues(prefix, 'sku')).toEqual(
      servers.map(() => [lock.queueName]),
    );
    await lock.release();
    await flushed(holder);
    expect(await keysOn(prefix, 'sku')).toEqual(nowhere());
  };

  /**
   * `first` holds `resource` as a lock it waited for (given by `opener`'s
   * release), and `second` waits behind it. Their in-process handoff is
   * off: each of their releases goes through Redis, as the last of a
   * streak of handoffs does (see local-handoff.spec.ts).
   */
  const contended = async (prefix: string, resource: string) => {
    const opener = make(prefix);
    const first = make(prefix, { localHandoff: 0 });
    const second = make(prefix, { localHandoff: 0 });
    const held = await opener.acquire(resource, { ttl: 20_000 });
    await flushed(opener);
    const pendingFirst = first.acquire(resource, SLOW_RETRY);
    await sleep(100);
    const pendingSecond = second.acquire(resource, SLOW_RETRY);
    await sleep(100);
    await held.release();
    const lock = await pendingFirst;
    expect(lock.waited).toBe(true);
    // Requests settle at a quorum: the slowest node may still be running
    // one of them, and the tests count script calls from here.
    await Promise.all([flushed(opener), flushed(first), flushed(second)]);
    return { first, second, lock, pendingSecond };
  };

  it('holders that release a contended key and ask again at once send no acquire: each gets the key after the waiter ahead of it', async () => {
    const prefix = uniquePrefix('again');
    const { first, second, lock, pendingSecond } = await contended(
      prefix,
      'sku',
    );
    let before = await scriptCalls(admin);
    await lock.release();
    const firstAgain = first.acquire('sku', SLOW_RETRY);
    let got: Lock | undefined;
    void firstAgain.then((l) => (got = l));
    const secondLock = await pendingSecond;
    await sleep(50);
    // Held at a quorum: the last node may still be running the release.
    await flushed(first);
    // The key went to the waiter ahead; the holder's new request waits
    // while that waiter holds it, and cost the nodes nothing: one release
    // per node.
    expect(secondLock.isHeld).toBe(true);
    expect(got).toBeUndefined();
    expect((await scriptCalls(admin)) - before).toBe(servers.length);
    before = await scriptCalls(admin);
    await secondLock.release();
    const secondAgain = second.acquire('sku', SLOW_RETRY);
    const mine = await firstAgain;
    await sleep(50);
    await flushed(second);
    expect((await scriptCalls(admin)) - before).toBe(servers.length);
    expect(mine.waited).toBe(true);
    // Its validity never outlives the keys' own lease.
    const key = `${prefix}sku`;
    const pttls = await Promise.all(admin.map((c) => c.pttl(key)));
    expect(mine.remaining()).toBeLessThanOrEqual(Math.min(...pttls) + 1);
    const values = await Promise.all(admin.map((c) => c.get(key)));
    expect(values).toEqual(servers.map(() => mine.value));
    await mine.release();
    await (await secondAgain).release();
    // The place the last release reserved was never adopted: it is gone
    // once the event loop turned, and so is every key.
    await sleep(50);
    expect(await queues(prefix, 'sku')).toEqual(servers.map(() => []));
    expect(await keysOn(prefix, 'sku')).toEqual(nowhere());
  });

  it('a release that reserves a place, with quit() called while it is out, leaves no place behind', async () => {
    const prefix = uniquePrefix('quit');
    const { first, second, lock, pendingSecond } = await contended(
      prefix,
      'sku',
    );
    // The release carries a place for first's next acquire, and two nodes
    // hold its answers while quit() runs. A place offered after quit()
    // gave up its reservations would stay queued, its clean-up meeting
    // closed connections, and second's release would give it the key.
    servers[1].freeze();
    servers[2].freeze();
    let released: Promise<unknown> | undefined;
    let quitting: Promise<void> | undefined;
    try {
      released = lock.release();
      await sleep(20);
      quitting = first.quit();
      await sleep(20);
    } finally {
      servers[1].thaw();
      servers[2].thaw();
    }
    await released;
    await quitting;
    const secondLock = await pendingSecond;
    await expectOnlyHolderQueued(prefix, second, secondLock);
  });

  it('the next caller waiting in the same process adopts the place its release reserved', async () => {
    const prefix = uniquePrefix('local');
    // No in-process handoff: the lease goes back through Redis.
    const replica = make(prefix, { localHandoff: 0 });
    const other = make(prefix);
    // The replica waits once first, so that it listens for releases
    // already (its first subscription wakes its waiters once).
    const opening = await other.acquire('sku');
    const pendingHeld = replica.acquire('sku', { ...SLOW_RETRY, ttl: 20_000 });
    await sleep(100);
    await opening.release();
    // The place is taken for the same lease only (it is in the place's name).
    const held = await pendingHeld;
    const remote = other.acquire('sku', SLOW_RETRY);
    await sleep(100);
    const local = replica.acquire('sku', { ...SLOW_RETRY, ttl: 20_000 });
    await sleep(100);
    const before = await scriptCalls(admin);
    await held.release();
    const remoteLock = await remote;
    await sleep(50);
    await remoteLock.release();
    const localLock = await local;
    await sleep(50);
    await Promise.all([flushed(replica), flushed(other)]);
    // The local caller never asked the nodes: two releases per node. The
    // other replica's release was held back for a caller of its own that
    // never came (deferred), so it reserved no place to take back.
    expect((await scriptCalls(admin)) - before).toBe(2 * servers.length);
    expect(localLock.isHeld).toBe(true);
    await localLock.release();
  });

  it('a place nobody adopts leaves the queues: the next release gives the key to nobody', async () => {
    const prefix = uniquePrefix('unused');
    const { second, lock, pendingSecond } = await contended(prefix, 'sku');
    await lock.release();
    const secondLock = await pendingSecond;
    await sleep(50);
    await expectOnlyHolderQueued(prefix, second, secondLock);
  });

  it('quit() takes back a place reserved by the last release', async () => {
    const prefix = uniquePrefix('quit');
    const { first, second, lock, pendingSecond } = await contended(
      prefix,
      'sku',
    );
    // Released and closed in the same turn of the event loop: the place is
    // still open when quit() runs.
    await lock.release().then(() => first.quit());
    await expectOnlyHolderQueued(prefix, second, await pendingSecond);
  });

  it('quit() makes a waiting acquire give up and leave the queues first: no key goes to a closed instance', async () => {
    const prefix = uniquePrefix('closing');
    const owner = make(prefix);
    const closing = make(prefix);
    const held = await owner.acquire('sku', { ttl: 20_000 });
    // Its request has reached every node (it settled at a quorum), so the
    // waiter below meets a held key everywhere.
    await flushed(owner);
    // A second caller of the closing instance waits in its local queue.
    const pending = closing.acquire('sku', SLOW_RETRY).catch((e: unknown) => e);
    const local = closing.acquire('sku', SLOW_RETRY).catch((e: unknown) => e);
    await sleep(200);
    expect((await queues(prefix, 'sku'))[0]).toHaveLength(1);
    await closing.quit();
    for (const error of [await pending, await local]) {
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).reason).toBe('closed');
    }
    expect(await queues(prefix, 'sku')).toEqual(servers.map(() => []));
    // Had its place stayed (it lives about 10 s with these settings), this
    // release would give the key to the closed instance for 10 s.
    await held.release();
    await flushed(owner);
    expect(await keysOn(prefix, 'sku')).toEqual(nowhere());
    await expect(closing.acquire('other')).rejects.toMatchObject({
      reason: 'closed',
    });
  });

  it.each([
    ['an acquire that may wait', {}],
    ['a one-attempt acquire (waitTimeout 0)', { waitTimeout: 0 }],
  ])(
    'quit() lets %s in flight finish, and takes back a lock it was granted meanwhile',
    async (_, options) => {
      const prefix = uniquePrefix('inflight');
      const closing = make(prefix, { nodeTimeout: 1000 });
      await closing.ready();
      // Two of three nodes stop answering: the attempt waits for them.
      servers[0].freeze();
      servers[1].freeze();
      const pending = closing.acquire('sku', options).catch((e: unknown) => e);
      await sleep(100);
      const closed = closing.quit();
      await sleep(50);
      servers[0].thaw();
      servers[1].thaw();
      // The thawed nodes grant it: a quorum, but the instance is closing.
      const error = await pending;
      await closed;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).reason).toBe('closed');
      expect((error as LockNotAcquiredError).attempts).toBe(1);
      expect(await keysOn(prefix, 'sku')).toEqual(nowhere());
    },
  );

  it('an uncontended release reserves nothing', async () => {
    const prefix = uniquePrefix('alone');
    const replica = make(prefix);
    const lock = await replica.acquire('sku');
    await lock.release();
    expect(replica.contention.reservations.size).toBe(0);
    expect(await queues(prefix, 'sku')).toEqual(servers.map(() => []));
  });
});
