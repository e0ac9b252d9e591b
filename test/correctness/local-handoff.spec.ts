import { describe, expect, it } from '@jest/globals';
import type {
  Lock,
  Redlock,
  RedlockOptions,
  ReleaseResult,
} from 'nestjs-redlock';
import { LOCAL_HANDOFF_WINDOW_MS } from '../../lib/core/contention/line.js';
import {
  flushed,
  scriptCalls,
  SLOW_RETRY,
  uniquePrefix,
} from '../utils/nodes.js';
import { COUNTING, ownNodes } from '../utils/own-nodes.js';

// The in-process handoff: a lease passes to another caller of the same
// process without a round trip, whether that caller waits already or asks
// right after the release (then the release is held back until the event
// loop turns). Own servers: the tests count script calls per node.
describe('in-process handoff', () => {
  const own = ownNodes(3, COUNTING);
  const { servers, admin } = own;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const make = own.prefixed;

  /**
   * `sku`'s key holds `lock`'s value on every node. A lock given on release
   * is held once a quorum of nodes gave it; the others follow as they run
   * the release, so a slow node is given a moment (at most 2 s).
   */
  const expectHeldEverywhere = async (prefix: string, lock: Lock) => {
    const read = () => Promise.all(admin.map((c) => c.get(`${prefix}sku`)));
    const everywhere = servers.map(() => lock.value);
    let values = await read();
    for (let i = 0; i < 40 && values.some((v) => v !== lock.value); i++) {
      await sleep(50);
      values = await read();
    }
    expect(values).toEqual(everywhere);
  };

  /**
   * A lock on `sku` that `replica` waited for (so it is contended), and a
   * waiter of another instance queued behind it.
   */
  const contended = async (
    prefix: string,
    options: Partial<RedlockOptions> = {},
  ) => {
    const opener = make(prefix);
    const replica = make(prefix, options);
    const other = make(prefix);
    const opening = await opener.acquire('sku');
    await flushed(opener);
    const pending = replica.acquire('sku', SLOW_RETRY);
    await sleep(100);
    await opening.release();
    const lock = await pending;
    expect(lock.waited).toBe(true);
    let remoteLock: Lock | undefined;
    const remote = other
      .acquire('sku', SLOW_RETRY)
      .then((l) => (remoteLock = l));
    await sleep(100);
    return { replica, other, lock, remote, got: () => remoteLock };
  };

  it('a caller of the same process waiting for the lock gets the lease at release, without a command', async () => {
    const prefix = uniquePrefix('waiting');
    const redlock = make(prefix);
    const held = await redlock.acquire('sku');
    const next = redlock.acquire('sku', SLOW_RETRY);
    await sleep(50);
    const before = await scriptCalls(admin);
    const result = await held.release();
    const lock = await next;
    expect(result).toMatchObject({ released: true, handedOver: true });
    expect(result.nodes).toEqual([]);
    expect((await scriptCalls(admin)) - before).toBe(0);
    // The same lease: value, keys and validity deadline.
    expect(lock.value).toBe(held.value);
    expect(lock.validUntil).toBe(held.validUntil);
    await expectHeldEverywhere(prefix, held);
    await lock.release();
  });

  it('a holder that asks again right after releasing a contended lock gets the lease back without a command; the waiter of another process keeps waiting', async () => {
    const prefix = uniquePrefix('again');
    const { replica, lock, remote, got } = await contended(prefix);
    const before = await scriptCalls(admin);
    const result = await lock.release();
    expect(result).toMatchObject({ released: true, deferred: true });
    expect(result.nodes).toEqual([]);
    const again = await replica.acquire('sku', SLOW_RETRY);
    await sleep(50);
    expect((await scriptCalls(admin)) - before).toBe(0);
    expect(again.value).toBe(lock.value);
    expect(again.validUntil).toBe(lock.validUntil);
    expect(got()).toBeUndefined();
    // Nobody of the replica asks after this release: it goes to the nodes
    // when the loop turns, and the key to the other process's waiter.
    expect((await again.release()).deferred).toBe(true);
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await remoteLock.release();
  });

  it('after localHandoff leases in a row the lock goes back through Redis, and the waiter of another process gets it', async () => {
    const prefix = uniquePrefix('streak');
    const { replica, lock, remote, got } = await contended(prefix, {
      localHandoff: 3,
    });
    const before = await scriptCalls(admin);
    let current = lock;
    for (let i = 0; i < 3; i++) {
      expect((await current.release()).deferred).toBe(true);
      current = await replica.acquire('sku', SLOW_RETRY);
      expect(current.value).toBe(lock.value);
    }
    expect((await scriptCalls(admin)) - before).toBe(0);
    // The fourth goes to the nodes at once, which give the key on.
    const fourth = await current.release();
    expect(fourth.deferred).toBeUndefined();
    expect(fourth.released).toBe(true);
    const afterStreak = replica.acquire('sku', SLOW_RETRY);
    const remoteLock = await remote;
    expect(remoteLock.value).not.toBe(lock.value);
    expect(got()).toBe(remoteLock);
    await sleep(50);
    // The replica, queued again behind it, is served at its release.
    await remoteLock.release();
    const mine = await afterStreak;
    await expectHeldEverywhere(prefix, mine);
    await mine.release();
  });

  it('leases stop passing within the process once the streak is older than the window, whatever localHandoff allows', async () => {
    // Long critical sections: the count (8) alone would keep the lock in
    // the replica for 8 of them while the other process waits.
    const longSection = () => sleep(LOCAL_HANDOFF_WINDOW_MS + 50);
    const afterFirstPass = async (prefix: string) => {
      const parts = await contended(prefix);
      expect((await parts.lock.release()).deferred).toBe(true);
      const second = await parts.replica.acquire('sku', SLOW_RETRY);
      expect(second.value).toBe(parts.lock.value);
      return { ...parts, second };
    };
    const servedRemote = async (
      prefix: string,
      result: ReleaseResult,
      remote: Promise<Lock>,
    ) => {
      expect(result.handedOver).toBeUndefined();
      expect(result.deferred).toBeUndefined();
      expect(result.released).toBe(true);
      expect(result.nodes).toHaveLength(servers.length);
      const remoteLock = await remote;
      await expectHeldEverywhere(prefix, remoteLock);
      return remoteLock;
    };

    // To a caller of the replica that waits already (handOver).
    const waiting = uniquePrefix('window-waiting');
    const a = await afterFirstPass(waiting);
    const third = a.replica.acquire('sku', SLOW_RETRY);
    await longSection();
    const remoteA = await servedRemote(
      waiting,
      await a.second.release(),
      a.remote,
    );
    await remoteA.release();
    // The replica's caller is served after the other process.
    const mine = await third;
    expect(mine.value).not.toBe(a.lock.value);
    await mine.release();

    // To a caller that asks right after the release (the hold-back).
    const asking = uniquePrefix('window-asking');
    const b = await afterFirstPass(asking);
    await longSection();
    const remoteB = await servedRemote(
      asking,
      await b.second.release(),
      b.remote,
    );
    await remoteB.release();
  });

  it('resource sets whose keys could be spelt alike never share a line: no wait, no lease of the other set', async () => {
    const prefix = uniquePrefix('lines');
    const redlock = make(prefix);
    // Two keys joined by a newline, and one key with that very name; a
    // fenced key, and an unfenced one named like its fenced form.
    const pair = await redlock.acquire(['a', 'b']);
    const fenced = await redlock.acquire('x', { fencing: true });
    const lookalikes = [`a\n${prefix}b`, 'x\nfenced'];
    const started = Date.now();
    const locks = await Promise.all(
      lookalikes.map((name) => redlock.acquire(name, SLOW_RETRY)),
    );
    // Nobody waited for the other set's release (the retry delay is 5 s).
    expect(Date.now() - started).toBeLessThan(2000);
    // The acquires settled at a quorum: a PING on each node's connection
    // answers after that node ran them.
    await Promise.all(redlock.nodes.map((n) => n.client.ping()));
    for (const [i, lock] of locks.entries()) {
      expect(lock.keys).toEqual([prefix + lookalikes[i]]);
      const values = await Promise.all(
        admin.map((c) => c.get(prefix + lookalikes[i])),
      );
      expect(values).toEqual(servers.map(() => lock.value));
    }
    // Released while the lookalikes wait: not handed to them either.
    const more = lookalikes.map((name) => redlock.acquire(name, SLOW_RETRY));
    await sleep(50);
    await Promise.all([pair.release(), fenced.release()]);
    await Promise.all(locks.map((lock) => lock.release()));
    for (const [i, lock] of (await Promise.all(more)).entries()) {
      expect(lock.keys).toEqual([prefix + lookalikes[i]]);
      expect([pair.value, fenced.value]).not.toContain(lock.value);
      await lock.release();
    }
  });

  it('a held-back release nobody adopts reaches the nodes when the event loop turns', async () => {
    const prefix = uniquePrefix('unadopted');
    const { replica, lock, remote } = await contended(prefix);
    expect((await lock.release()).deferred).toBe(true);
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await flushed(replica);
    expect(replica.contention.queue.size).toBe(0);
    await remoteLock.release();
  });

  it('a held-back release that misses the quorum is reported to the logger', async () => {
    const prefix = uniquePrefix('deferred-fails');
    const warnings: string[] = [];
    const { lock, remote } = await contended(prefix, {
      logger: { warn: (message) => warnings.push(message) },
      nodeTimeout: 300,
    });
    servers[1].freeze();
    servers[2].freeze();
    try {
      expect((await lock.release()).deferred).toBe(true);
      expect(warnings).toEqual([]);
      // Sent when the loop turns; two nodes of three time out.
      await sleep(600);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('"sku" reached 1 of 3 nodes (quorum 2)');
      expect(warnings[0]).toContain(`127.0.0.1:${servers[1].port} timeout`);
    } finally {
      servers[1].thaw();
      servers[2].thaw();
    }
    // The frozen nodes run the release once thawed: the key goes on.
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await remoteLock.release();
  });

  it('tryAcquire right after a held-back release takes the lease too, instead of finding the key busy', async () => {
    const prefix = uniquePrefix('try-again');
    const { replica, lock, remote, got } = await contended(prefix);
    const before = await scriptCalls(admin);
    expect((await lock.release()).deferred).toBe(true);
    const again = await replica.tryAcquire('sku');
    expect(again?.value).toBe(lock.value);
    expect(again?.validUntil).toBe(lock.validUntil);
    await sleep(50);
    expect((await scriptCalls(admin)) - before).toBe(0);
    expect(got()).toBeUndefined();
    // It holds the line like any holder: its release goes on as usual.
    await again?.release();
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await remoteLock.release();
  });

  it('a held-back lease asked for after long synchronous work, with less than half of it left, is not adopted', async () => {
    const prefix = uniquePrefix('late-adopter');
    const { replica, lock, remote } = await contended(prefix, { ttl: 2000 });
    expect((await lock.release()).deferred).toBe(true);
    // The same turn, but 1.1 s later: under 900 ms of the 2 s lease left.
    const until = Date.now() + 1100;
    while (Date.now() < until);
    const again = replica.acquire('sku', SLOW_RETRY);
    // Sent to the nodes instead: the other process's waiter is served first.
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await remoteLock.release();
    const next = await again;
    expect(next.value).not.toBe(lock.value);
    expect(next.remaining()).toBeGreaterThan(1000);
    await next.release();
  });

  it('quit() sends a release held back for an adopter', async () => {
    const prefix = uniquePrefix('quit');
    const { replica, lock, remote } = await contended(prefix);
    // Released and closed in the same turn: the lease is still kept.
    await lock.release().then(() => replica.quit());
    const remoteLock = await remote;
    await expectHeldEverywhere(prefix, remoteLock);
    await remoteLock.release();
  });

  it('a release once quit() began reserves no queue place for an acquire that will not come', async () => {
    const prefix = uniquePrefix('quit-reserve');
    const { replica, lock, remote } = await contended(prefix);
    const quitting = replica.quit();
    await lock.release();
    await quitting;
    // The other process's waiter gets the key; its release must find
    // nobody queued behind it (a place reserved for the replica would be
    // given the key for a whole lease).
    const remoteLock = await remote;
    await remoteLock.release();
    const free = await make(prefix).tryAcquire('sku');
    expect(free).not.toBeNull();
    await free?.release();
  });

  it('a caller asking for another lease is not handed the lock: it goes through Redis', async () => {
    const prefix = uniquePrefix('lease');
    const redlock = make(prefix);
    const held = await redlock.acquire('sku', { ttl: 10_000 });
    const waiter = redlock.acquire('sku', { ...SLOW_RETRY, ttl: 20_000 });
    await sleep(50);
    const result = await held.release();
    expect(result.handedOver).toBeUndefined();
    expect(result.nodes).toHaveLength(servers.length);
    const lock = await waiter;
    expect(lock.value).not.toBe(held.value);
    expect(lock.ttl).toBe(20_000);

    // Held back for an adopter, then asked for with another lease: sent
    // to the nodes at once, and the caller acquires through them.
    const {
      replica,
      lock: mine,
      remote,
    } = await contended(uniquePrefix('lease-again'));
    expect((await mine.release()).deferred).toBe(true);
    const again = replica.acquire('sku', { ...SLOW_RETRY, ttl: 20_000 });
    const remoteLock = await remote;
    await remoteLock.release();
    const next = await again;
    expect(next.value).not.toBe(mine.value);
    expect(next.ttl).toBe(20_000);
    await Promise.all([lock.release(), next.release()]);
  });

  it('a release is not held back for a lock that nobody contended, a fenced lock, with less than half the lease left, or with localHandoff 0', async () => {
    const released = async (redlock: Redlock, lock: Lock) => {
      const result = await lock.release();
      expect(result.deferred).toBeUndefined();
      // The nodes were asked (it settles once a quorum deleted the keys).
      expect(result.released).toBe(true);
      expect(result.nodes).toHaveLength(servers.length);
      expect(redlock.contention.queue.size).toBe(0);
    };
    const plain = make(uniquePrefix('plain'));
    await released(plain, await plain.acquire('sku'));

    const fenced = await contended(uniquePrefix('fenced'), { fencing: true });
    await released(fenced.replica, fenced.lock);
    await (await fenced.remote).release();

    const short = await contended(uniquePrefix('short'));
    // Less than half of a 2 s lease left, with room to spare before it ends.
    await short.lock.extend(2000);
    await sleep(1100);
    await released(short.replica, short.lock);
    await (await short.remote).release();

    const off = await contended(uniquePrefix('off'), { localHandoff: 0 });
    await released(off.replica, off.lock);
    await (await off.remote).release();
  });
});
