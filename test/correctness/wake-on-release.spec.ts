import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Redlock, type RedlockOptions } from 'nestjs-redlock';
import {
  flushed,
  scriptCalls,
  settledTo,
  SLOW_RETRY,
  startListening,
  uniquePrefix,
} from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';
import {
  ACQUIRE_SCRIPT,
  acquireArgs,
  declareMetaKeys,
} from '../../lib/core/scripts/index.js';

// Waiters wake on a release message; a lost message still ends in a grant
// within the holder's lease. Own servers: the test kills pub/sub
// connections (CLIENT KILL TYPE pubsub) and counts commands per node.
describe('wake on release, local queue', () => {
  const own = ownNodes(3);
  const { servers, admin } = own;
  const make = (options: Partial<RedlockOptions> = {}) =>
    own.make({ keyPrefix: uniquePrefix('wake'), ...options });
  const evalshaCalls = () => scriptCalls(admin);

  /**
   * A lock held by one instance (20 s lease) and another instance queued
   * for it with a 5 s fallback retry, so that only a release message (or a
   * reconnect) can get it in sooner. Returns once the waiter is queued.
   */
  const holdAndQueue = async (
    label: string,
    resources: string | string[],
    options: Parameters<Redlock['acquire']>[1] = {},
  ) => {
    const prefix = uniquePrefix(label);
    const waiter = make({ keyPrefix: prefix });
    const holder = make({ keyPrefix: prefix });
    const held = await holder.acquire(resources, {
      ttl: 20_000,
    });
    const start = Date.now();
    const pending = waiter.acquire(resources, { ...SLOW_RETRY, ...options });
    await new Promise((r) => setTimeout(r, 300));
    return { prefix, waiter, holder, held, pending, start };
  };

  it('wakes a waiter in another process by the release message, long before its fallback retry', async () => {
    // Only a release message can get the waiter in before 5 s.
    const { waiter, held, pending, start } = await holdAndQueue('w', 'sku:1');
    await held.release();
    const lock = await pending;
    expect(Date.now() - start).toBeLessThan(5000);
    expect(waiter.contention.listener.wakeups).toBeGreaterThanOrEqual(1);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  it('a holder that never releases (crashed): the waiter retries when its lease runs out, not after retryDelay', async () => {
    const prefix = uniquePrefix('lost');
    const owner = make({ keyPrefix: prefix });
    const waiter = make({ keyPrefix: prefix });
    // Never released: no message is ever published.
    await owner.acquire('sku:2', { ttl: 1500 });
    const start = Date.now();
    const lock = await waiter.acquire('sku:2', SLOW_RETRY);
    const elapsed = Date.now() - start;
    // Fallback bounded by the holder's PTTL (about 1.5 s left at the first
    // attempt), not by retryDelay (5 s).
    expect(elapsed).toBeLessThan(4000);
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(lock.isHeld).toBe(true);
    await lock.release();
  });

  /** Makes `waiter` wait once for `resource`, so its subscribers exist. */
  const subscribe = async (
    owner: Redlock,
    waiter: Redlock,
    resource: string,
  ) => {
    const first = await owner.acquire(resource, { ttl: 20_000 });
    const warm = waiter.acquire(resource, SLOW_RETRY);
    await new Promise((r) => setTimeout(r, 200));
    await first.release();
    await (await warm).release();
  };

  /**
   * Queues `waiter` behind a 20 s lock on `resource` and checks a release
   * message wakes it: its fallback retry is 5 s away.
   */
  const expectWokenByMessage = async (
    owner: Redlock,
    waiter: Redlock,
    resource: string,
  ) => {
    const second = await owner.acquire(resource, { ttl: 20_000 });
    const start = Date.now();
    const pending = waiter.acquire(resource, SLOW_RETRY);
    await new Promise((r) => setTimeout(r, 200));
    const wakeups = waiter.contention.listener.wakeups;
    await second.release();
    const lock = await pending;
    expect(Date.now() - start).toBeLessThan(3000);
    expect(waiter.contention.listener.wakeups).toBeGreaterThan(wakeups);
    await lock.release();
  };

  it('wakes again after the subscriber reconnected (a released lock after CLIENT KILL is announced)', async () => {
    const prefix = uniquePrefix('again');
    const owner = make({ keyPrefix: prefix });
    const waiter = make({ keyPrefix: prefix });
    // Make sure the waiter is subscribed, then kill its subscriptions.
    await subscribe(owner, waiter, 'sku:3');
    for (const client of admin)
      await client.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await new Promise((r) => setTimeout(r, 500)); // ioredis reconnects and re-subscribes
    await expectWokenByMessage(owner, waiter, 'sku:3');
  });

  it('a subscriber dropped again right after it reconnected listens again, and raises no unhandled rejection: messages wake waiters after', async () => {
    const prefix = uniquePrefix('flap');
    const owner = make({ keyPrefix: prefix });
    const waiter = make({ keyPrefix: prefix });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await subscribe(owner, waiter, 'sku:f');
      // Kill the subscribers; when one has reconnected and subscribes
      // again, drop its connection before the node can answer.
      const sub = (
        waiter.contention.listener as unknown as { subscribers: Redis[] }
      ).subscribers[0];
      sub.once('ready', () => process.nextTick(() => sub.stream.destroy()));
      await Promise.all(
        admin.map((c) => c.call('CLIENT', 'KILL', 'TYPE', 'pubsub')),
      );
      await new Promise((r) => setTimeout(r, 500));
      // Subscribed again.
      await expectWokenByMessage(owner, waiter, 'sku:f');
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a release gives the key to the waiter of another process: it holds the lock without asking again', async () => {
    const { prefix, waiter, holder, held, pending } = await holdAndQueue(
      'give',
      'sku:g',
      {
        ttl: 5000,
      },
    );
    const before = await evalshaCalls();
    await held.release();
    const lock = await pending;
    // The waiter holds the lock once a quorum gave it the key; the last
    // node may still be running the release.
    await flushed(holder);
    // The holder's release ran once per node; the waiter sent nothing.
    expect((await evalshaCalls()) - before).toBe(servers.length);
    const key = `${prefix}sku:g`;
    const values = await Promise.all(admin.map((c) => c.get(key)));
    expect(values.filter((v) => v === lock.value).length).toBe(servers.length);
    // The validity the waiter counts never outlives the keys' own lease.
    const pttls = await Promise.all(admin.map((c) => c.pttl(key)));
    expect(lock.remaining()).toBeGreaterThan(4000);
    expect(lock.remaining()).toBeLessThanOrEqual(Math.min(...pttls) + 1);
    await lock.release();
    await flushed(waiter);
    expect(await Promise.all(admin.map((c) => c.exists(key)))).toEqual(
      servers.map(() => 0),
    );
  });

  it('a key given while the message is lost is still counted: the waiter asks and finds its own value', async () => {
    const prefix = uniquePrefix('lostgift');
    // Its subscribers (copies of these clients) reconnect 1 s after a
    // kill, not ioredis's 50 ms: the release below surely finds none.
    const waiter = make({
      keyPrefix: prefix,
      clients: servers.map((s) => {
        const { hostname, port } = new URL(s.url);
        return {
          host: hostname,
          port: Number(port),
          retryStrategy: () => 1000,
        };
      }),
    });
    const held = await make({ keyPrefix: prefix }).acquire('sku:l', {
      ttl: 20_000,
    });
    const start = Date.now();
    const pending = waiter.acquire('sku:l', { ...SLOW_RETRY, ttl: 5000 });
    await new Promise((r) => setTimeout(r, 300));
    // Every node gives the key to the waiter, but nobody is subscribed to
    // hear it: the messages are lost.
    await Promise.all(
      admin.map((client) => client.call('CLIENT', 'KILL', 'TYPE', 'pubsub')),
    );
    const wakeups = waiter.contention.listener.wakeups;
    await held.release();
    const key = `${prefix}sku:l`;
    const lock = await pending;
    // No message reached it: it asked, and found its own value.
    expect(waiter.contention.listener.wakeups).toBe(wakeups);
    // Woken by its reconnected subscriber (or its fallback), not by 5 s.
    expect(Date.now() - start).toBeLessThan(4000);
    const values = await Promise.all(admin.map((c) => c.get(key)));
    expect(values.every((v) => v === lock.value)).toBe(true);
    const pttls = await Promise.all(admin.map((c) => c.pttl(key)));
    expect(lock.remaining()).toBeLessThanOrEqual(Math.min(...pttls) + 1);
    await lock.release();
  });

  it('a waiter that gave up leaves the queues: the next release gives the key to nobody', async () => {
    const prefix = uniquePrefix('gone');
    const owner = make({ keyPrefix: prefix });
    const quitter = make({ keyPrefix: prefix });
    const held = await owner.acquire('sku:q', { ttl: 20_000 });
    const error = await quitter
      .acquire('sku:q', { waitTimeout: 200 })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('LockNotAcquiredError');
    await held.release();
    // Had it kept its place, the key would now hold its value for 10 s.
    const lock = await make({ keyPrefix: prefix }).tryAcquire('sku:q');
    expect(lock).not.toBeNull();
    await lock?.release();
  });

  it('a key given while a refused attempt still waits for a frozen node is not lost: the waiter holds the lock without its fallback retry', async () => {
    const prefix = uniquePrefix('gap');
    const owner = make({ keyPrefix: prefix });
    const waiter = make({ keyPrefix: prefix, nodeTimeout: 600 });
    await startListening(owner, waiter);

    const held = await owner.acquire('sku', { ttl: 20_000 });
    await flushed(owner);
    servers[2].freeze();
    try {
      const start = Date.now();
      // Refused by two nodes at once; the attempt then takes back whatever
      // the frozen node may have granted, which waits its node timeout.
      const pending = waiter.acquire('sku', SLOW_RETRY);
      await new Promise((r) => setTimeout(r, 150));
      // The release gives the key to the waiter on the two live nodes
      // while its attempt is still out.
      await held.release();
      const lock = await pending;
      expect(Date.now() - start).toBeLessThan(3000);
      expect(lock.isHeld).toBe(true);
      const values = await Promise.all(
        admin.slice(0, 2).map((c) => c.get(`${prefix}sku`)),
      );
      expect(values).toEqual([lock.value, lock.value]);
      // Its validity never outlives the keys' own lease.
      const pttls = await Promise.all(
        admin.slice(0, 2).map((c) => c.pttl(`${prefix}sku`)),
      );
      expect(lock.remaining()).toBeLessThanOrEqual(Math.min(...pttls) + 1);
      await lock.release();
    } finally {
      servers[2].thaw();
    }
  });

  it('an instance that starts listening during its first wait still hears a key given while its next attempt is out', async () => {
    const prefix = uniquePrefix('gap-fresh');
    const owner = make({ keyPrefix: prefix });
    // Never waited before: it subscribes during this acquire's first wait.
    const waiter = make({ keyPrefix: prefix, nodeTimeout: 600 });
    const held = await owner.acquire('sku', { ttl: 20_000 });
    await flushed(owner);
    const before = await scriptCalls([admin[0]]);
    servers[2].freeze();
    try {
      const start = Date.now();
      // Each attempt is refused by the two live nodes at once, then takes
      // back what the frozen node may have granted, which waits its node
      // timeout. The first wait subscribes, and once a quorum of nodes can
      // be heard it sends the second attempt.
      const pending = waiter.acquire('sku', SLOW_RETRY);
      while ((await scriptCalls([admin[0]])) < before + 2)
        await new Promise((r) => setTimeout(r, 5));
      // The second attempt was answered by node 0 and still waits for the
      // frozen node: the release gives the key to the waiter now.
      await held.release();
      const lock = await pending;
      // Lost, the gift would wait for the 5 s fallback retry.
      expect(Date.now() - start).toBeLessThan(3000);
      expect(lock.isHeld).toBe(true);
      await lock.release();
    } finally {
      servers[2].thaw();
    }
  });

  it('a queued member whose expiry entry is gone (evicted, deleted) is dropped, not given the key', async () => {
    const { prefix, waiter, held, pending } = await holdAndQueue(
      'orphan',
      'sku:o',
    );
    const key = `${prefix}sku:o`;
    const queue = `${waiter.metaPrefix}q:${key}`;
    // A member ahead of the waiter with no entry in the expiry set: what
    // maxmemory eviction of that key alone leaves behind. It never leaves
    // by expiry, and would be given the key at every release.
    const [, ahead] = await admin[0].zrange(queue, '0', '0', 'WITHSCORES');
    await Promise.all(
      admin.map((c) =>
        c.zadd(queue, Number(ahead) - 1, 'dead deadvalue 10000'),
      ),
    );
    await held.release();
    const lock = await pending;
    // On every node once each has answered (the release and the grant
    // settle at a quorum).
    const values = () => Promise.all(admin.map((c) => c.get(key)));
    expect(
      await settledTo(
        values,
        servers.map(() => lock.value),
      ),
    ).toEqual(servers.map(() => lock.value));
    expect(
      await Promise.all(
        admin.map((c) => c.zscore(queue, 'dead deadvalue 10000')),
      ),
    ).toEqual(servers.map(() => null));
    await lock.release();
  });

  it('a waiter that gives up while the key is free hands it to the next waiter, long before its fallback retry', async () => {
    const prefix = uniquePrefix('leave-free');
    const holder = make({ keyPrefix: prefix });
    const blocker = make({ keyPrefix: prefix });
    const told = make({ keyPrefix: prefix });
    const next = make({ keyPrefix: prefix });
    const a = await holder.acquire('a', { ttl: 20_000 });
    const b = await blocker.acquire('b', { ttl: 20_000 });
    const start = Date.now();
    // First in line for 'a', but it needs 'b' too: told when 'a' is
    // released, refused on 'b', and it gives up with 'a' free.
    const first = told
      .acquire(['a', 'b'], { ...SLOW_RETRY, waitTimeout: 800 })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const second = next.acquire('a', SLOW_RETRY);
    await new Promise((r) => setTimeout(r, 100));
    await a.release();
    expect(await first).toMatchObject({ name: 'LockNotAcquiredError' });
    const lock = await second;
    // Not its fallback retry (5 s after it asked).
    expect(Date.now() - start).toBeLessThan(3000);
    await Promise.all([lock.release(), b.release()]);
  });

  /**
   * For tests of the acquire script on one node: a fresh key and meta
   * prefix, and the node's clock (ms), which the script's queue reads.
   */
  const scriptStage = async (label: string) => {
    const node = admin[0];
    const [seconds, micros] = await node.time();
    return {
      node,
      key: `${uniquePrefix(label)}sku`,
      meta: `${label}-meta:`,
      now: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000),
    };
  };
  /**
   * The acquire script on that node: value `mine`, 10 s lease, no fencing,
   * place `place`; its meta keys declared, as the library sends it.
   */
  const acquireAsMine = (key: string, meta: string, place: string) => {
    const { keys, args } = declareMetaKeys(
      ACQUIRE_SCRIPT,
      [key],
      acquireArgs('mine', 10_000, meta, false, place),
    );
    return admin[0].eval(ACQUIRE_SCRIPT.source, keys.length, ...keys, ...args);
  };

  it("a key already holding the caller's value is granted to it even when another waiter has queued long", async () => {
    // A key given to a waiter whose place on that node has meanwhile
    // expired: its next attempt must take it (and renew it), not be told
    // "busy" because someone else now heads the queue.
    const { node, key, meta, now } = await scriptStage('ours');
    await node.set(key, 'mine', 'PX', 3000);
    const head = 'h1 theirs 10000';
    await node.zadd(`${meta}q:${key}`, now - 400, head);
    await node.zadd(`${meta}t:${key}`, now + 5000, head);
    const reply = await acquireAsMine(key, meta, `650 ${now} h2 mine 10000`);
    expect(reply).toBe(1);
    expect(await node.pttl(key)).toBeGreaterThan(3000);
    await node.del(key, `${meta}q:${key}`, `${meta}t:${key}`);
  });

  it('a waiter granted on a node keeps its place there alive, as on the nodes that refuse it', async () => {
    const { node, key, meta, now } = await scriptStage('place');
    // Queued since a while, its place about to lapse; the key is free here.
    const me = 'w1 mine 10000';
    await node.zadd(`${meta}q:${key}`, now - 400, me);
    await node.zadd(`${meta}t:${key}`, now + 100, me);
    const reply = await acquireAsMine(key, meta, `650 ${now - 400} ${me}`);
    expect(reply).toBe(1);
    // Same rank (arrival), renewed life.
    expect(Number(await node.zscore(`${meta}q:${key}`, me))).toBe(now - 400);
    expect(
      Number(await node.zscore(`${meta}t:${key}`, me)),
    ).toBeGreaterThanOrEqual(now + 600);
    await node.del(key, `${meta}q:${key}`, `${meta}t:${key}`);
  });

  it('wakes waiters also on borrowed clients without an offline queue', async () => {
    const prefix = uniquePrefix('no-offline-queue');
    const borrowed = () =>
      servers.map((s) => new Redis(s.url, { enableOfflineQueue: false }));
    const clients = [...borrowed(), ...borrowed()];
    try {
      // Without an offline queue, commands need a connection already made.
      await Promise.all(
        clients.map((c) => new Promise((r) => c.once('ready', r))),
      );
      const holder = own.make({
        clients: clients.slice(0, 3),
        keyPrefix: prefix,
      });
      const waiter = own.make({ clients: clients.slice(3), keyPrefix: prefix });
      const held = await holder.acquire('sku', { ttl: 20_000 });
      const start = Date.now();
      const pending = waiter.acquire('sku', SLOW_RETRY);
      await new Promise((r) => setTimeout(r, 300));
      await held.release();
      const lock = await pending;
      // Woken by the release message, not by its fallback retry (5 s).
      expect(Date.now() - start).toBeLessThan(3000);
      await lock.release();
      await Promise.all([holder.quit(), waiter.quit()]);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

  it('quit() does not wait for a frozen node to answer QUIT', async () => {
    const holder = make();
    const waiter = make({ keyPrefix: holder.keyPrefix });
    // The waiter has subscriber connections too.
    await startListening(holder, waiter);
    servers[1].freeze();
    try {
      const start = Date.now();
      await Promise.all([holder.quit(), waiter.quit()]);
      // A QUIT that nobody answers is given up after 1 s (not minutes).
      expect(Date.now() - start).toBeLessThan(5000);
    } finally {
      servers[1].thaw();
    }
  });

  it('a multi-resource waiter is told, not given its keys: it asks once more', async () => {
    const { waiter, holder, held, pending } = await holdAndQueue('told', [
      'a',
      'b',
    ]);
    const before = await evalshaCalls();
    const start = Date.now();
    await held.release();
    const lock = await pending;
    expect(Date.now() - start).toBeLessThan(2000);
    // Held at a quorum: the last node may still be running a request.
    await Promise.all([flushed(holder), flushed(waiter)]);
    // A key given alone would hold half a lock: one release and one
    // attempt per node.
    expect((await evalshaCalls()) - before).toBe(2 * servers.length);
    expect(lock.resources).toEqual(['a', 'b']);
    await lock.release();
  });

  it('waiters of different processes get the lock in the order they asked', async () => {
    const prefix = uniquePrefix('order');
    const holder = make({ keyPrefix: prefix });
    const held = await holder.acquire('line', { ttl: 20_000 });
    const order: number[] = [];
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      const replica = make({ keyPrefix: prefix });
      pending.push(
        replica
          .acquire('line', { retryDelay: 5000, waitTimeout: 10_000 })
          .then(async (lock) => {
            order.push(i);
            await lock.release();
          }),
      );
      await new Promise((r) => setTimeout(r, 30));
    }
    await held.release();
    await Promise.all(pending);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('handoffs between processes never let two holders in, also while release messages are lost and a node freezes', async () => {
    const prefix = uniquePrefix('excl');
    const replicas = Array.from({ length: 6 }, () =>
      make({ keyPrefix: prefix }),
    );
    let inside = 0;
    let overlaps = 0;
    let sections = 0;
    const work = async (redlock: Redlock) => {
      for (let i = 0; i < 40; i++) {
        await redlock.using(
          'hot',
          async () => {
            if (++inside > 1) overlaps++;
            await new Promise((r) => setTimeout(r, 1));
            inside--;
            sections++;
          },
          { waitTimeout: 20_000 },
        );
      }
    };
    const faults = (async () => {
      // One node of three stops answering for a while: the other two
      // still make a quorum, and its queued requests land when it thaws.
      await new Promise((r) => setTimeout(r, 100));
      servers[2].freeze();
      await new Promise((r) => setTimeout(r, 300));
      servers[2].thaw();
      for (let k = 0; k < 3; k++) {
        await new Promise((r) => setTimeout(r, 100));
        for (const client of admin)
          await client.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      }
    })();
    await Promise.all([...replicas.map(work), faults]);
    expect(sections).toBe(240);
    expect(overlaps).toBe(0);
    const given = replicas.reduce(
      (n, r) => n + r.contention.listener.wakeups,
      0,
    );
    expect(given).toBeGreaterThan(0);
  });

  it('serves waiters of one process first come, first served', async () => {
    const prefix = uniquePrefix('fifo');
    const redlock = make({ keyPrefix: prefix });
    const held = await redlock.acquire('line');
    const order: number[] = [];
    const pending = Array.from({ length: 10 }, (_, i) =>
      redlock.acquire('line', { waitTimeout: 10_000 }).then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    await new Promise((r) => setTimeout(r, 100));
    await held.release();
    await Promise.all(pending);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a local waiter times out with LockNotAcquiredError while the holder keeps the lock', async () => {
    const redlock = make();
    const held = await redlock.acquire('timeout', { ttl: 5000 });
    const error = await redlock
      .acquire('timeout', { waitTimeout: 150 })
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('LockNotAcquiredError');
    await held.release();
    expect(redlock.contention.queue.size).toBe(0);
  });

  it('a local waiter takes its turn when the holder lets its lock expire without releasing it', async () => {
    const redlock = make();
    await redlock.acquire('abandoned', { ttl: 400 });
    const start = Date.now();
    const lock = await redlock.acquire('abandoned', {
      waitTimeout: 5000,
      retryDelay: 4000,
      retryJitter: 0,
    });
    expect(Date.now() - start).toBeGreaterThanOrEqual(350);
    expect(Date.now() - start).toBeLessThan(3000);
    await lock.release();
  });
});
