import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import {
  FencedStore,
  Redlock,
  type Lock,
  type LockNotAcquiredError,
  type RedlockHealth,
  type RedlockOptions,
} from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { closeAll, uniquePrefix } from '../utils/nodes.js';
import {
  fulfilled,
  leftovers,
  noUnhandledRejections,
  settle,
  typed,
} from './harness.js';

// Nodes that misbehave, on servers of this spec (stopped by pid after it):
// a replica answering READONLY, a node out of memory, scripts flushed, and
// a node that closes every connection. Each call gives a typed error or
// the documented outcome within its bound, and leaves no key.

describe('hostile nodes (own redis-server processes)', () => {
  noUnhandledRejections();
  // 0-2: a healthy set; 3: the replica; 4: its master; 5: the OOM node.
  const servers: RedisServer[] = [];
  const admin: Redis[] = [];
  const instances: Redlock[] = [];
  const keyPrefix = uniquePrefix('hs');
  const metaPrefix = uniquePrefix('hsm');
  let closer: Server;
  let closerUrl: string;
  const sockets = new Set<Socket>();
  let accepted = 0;

  beforeAll(async () => {
    servers.push(...(await startServers(6)));
    admin.push(...servers.map((s) => s.client()));
    // The master syncs a new replica at once instead of waiting 5 s for others.
    await admin[4].config('SET', 'repl-diskless-sync-delay', '0');
    await admin[3].replicaof('127.0.0.1', servers[4].port);
    // A "node" that accepts every connection and closes it at once.
    closer = createServer((socket) => {
      accepted++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.destroy();
    });
    await new Promise<void>((resolve) =>
      closer.listen(0, '127.0.0.1', resolve),
    );
    const address = closer.address() as { port: number };
    closerUrl = `redis://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    await Promise.all(instances.map((r) => settle(() => r.quit(), 5000)));
    await closeAll(admin);
    await new Promise((resolve) => closer.close(resolve));
    await Promise.all(servers.map((s) => s.stop()));
  });

  const url = (i: number) => servers[i].url;
  const make = (clients: string[], options: Partial<RedlockOptions> = {}) => {
    const redlock = new Redlock({
      clients,
      keyPrefix,
      metaPrefix,
      ttl: 2000,
      waitTimeout: 300,
      // Healthy nodes answer within it on a busy machine too (the default,
      // 100 ms here, is for a responsive one).
      nodeTimeout: 250,
      logger: { warn: () => undefined },
      ...options,
    });
    instances.push(redlock);
    return redlock;
  };
  /** No lock or meta key left on the given servers (all of them by default). */
  const noneLeft = async (
    redlocks: Redlock[],
    on: number[] = [0, 1, 2, 3, 4, 5],
  ) => {
    expect(
      await leftovers(
        redlocks,
        on.map((i) => admin[i]),
        [keyPrefix, metaPrefix],
        [`${metaPrefix}fence:`],
      ),
    ).toEqual([]);
  };
  /** Resolves once a replica finished its sync with its master (5 s at most). */
  const synced = async (replica: Redis) => {
    for (let i = 0; i < 250; i++) {
      const info = await replica.info('replication');
      if (/master_link_status:up/.test(info)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the replica did not sync within 5 s');
  };
  const errorsOf = (error: LockNotAcquiredError) =>
    error.nodes.map((n) => `${n.outcome} ${n.error ?? ''}`.trim());

  describe('a node that answers READONLY (a replica)', () => {
    it('alone: acquire, tryAcquire and a fenced acquire reject with LockNotAcquiredError (unreachable, 503) naming READONLY; nothing written', async () => {
      const redlock = make([url(3)]);
      for (const call of [
        () => redlock.acquire('ro'),
        () => redlock.tryAcquire('ro'),
        () => redlock.acquire('ro', { fencing: true }),
      ]) {
        const error = typed<LockNotAcquiredError>(
          await settle(call, 3000),
          'LockNotAcquiredError',
        );
        expect(error.reason).toBe('unreachable');
        expect(error.statusCode).toBe(503);
        expect(errorsOf(error)).toEqual([
          expect.stringMatching(/^error .*READONLY/),
        ]);
      }
      await noneLeft([redlock]);
    });

    it('one of three: locks work on the two masters (the replica votes error); two of three: unreachable, the master’s grant taken back', async () => {
      const one = make([url(0), url(1), url(3)]);
      const lock = fulfilled(await settle(() => one.acquire('ro1'))) as Lock;
      fulfilled(await settle(() => lock.extend()));
      expect(fulfilled(await settle(() => lock.release()))).toMatchObject({
        released: true,
      });
      await admin[2].replicaof('127.0.0.1', servers[4].port);
      try {
        const two = make([url(0), url(2), url(3)]);
        const error = typed<LockNotAcquiredError>(
          await settle(() => two.acquire('ro2'), 3000),
          'LockNotAcquiredError',
        );
        expect(error.reason).toBe('unreachable');
        await noneLeft([one, two]);
      } finally {
        await admin[2].replicaof('NO', 'ONE');
      }
    });

    it('a node turned replica while a lock is held (its key wiped by the sync): extend and release still succeed on the quorum', async () => {
      const redlock = make([url(0), url(1), url(2)]);
      const lock = await redlock.acquire('ro-held', { ttl: 10_000 });
      await admin[2].replicaof('127.0.0.1', servers[4].port);
      try {
        await synced(admin[2]);
        expect(await admin[2].exists(lock.keys[0])).toBe(0);
        fulfilled(await settle(() => lock.extend()));
        const result = fulfilled(await settle(() => lock.release()));
        expect(result).toMatchObject({ released: true });
        await noneLeft([redlock]);
      } finally {
        await admin[2].replicaof('NO', 'ONE');
      }
    });

    it('inspect() and health() on a replica: they only read, and report it up', async () => {
      const redlock = make([url(3)]);
      const seen = fulfilled(await settle(() => redlock.inspect('ro'))) as {
        held: boolean;
        nodes: { up: boolean }[];
      };
      expect([seen.held, seen.nodes[0].up]).toEqual([false, true]);
      const health = fulfilled(
        await settle(() => redlock.health()),
      ) as RedlockHealth;
      expect(health.healthy).toBe(true);
    });

    it('FencedStore on a replica: rejects with the READONLY reply, nothing written', async () => {
      const store = new FencedStore(admin[3], { prefix: `${metaPrefix}f:` });
      const out = await settle(() =>
        store.set({ resource: 'r', token: '1' }, `${keyPrefix}data`, 'v'),
      );
      expect(out.status).toBe('rejected');
      expect(String((out as { error: unknown }).error)).toMatch(/READONLY/);
      await noneLeft([]);
    });
  });

  describe('a node out of memory (maxmemory 1mb, noeviction, filled)', () => {
    let held: Lock;
    let redlock: Redlock;
    beforeAll(async () => {
      redlock = make([url(5)]);
      // Taken before the node fills up: it must still extend and release.
      held = await redlock.acquire('oom-held', { ttl: 10_000 });
      const node = admin[5];
      await node.config('SET', 'maxmemory-policy', 'noeviction');
      await node.config('SET', 'maxmemory', '1mb');
      // Filled until even a small write is refused. 10 kB values first,
      // then 1 kB, then 64 B ones: Redis 8 and Valkey 8 free the query
      // buffer of the client whose 10 kB SET was refused, which brings the
      // node back under maxmemory by tens of kB, and the next small write
      // (the lock's SET) would be accepted. Redis 7.0 keeps that buffer.
      let i = 0;
      for (const size of [10_000, 1_000, 64]) {
        const filler = 'x'.repeat(size);
        for (let n = 0; ; n++, i++) {
          const refused = await node.set(`fill:${i}`, filler).then(
            () => false,
            (error: Error) => /OOM/.test(error.message),
          );
          if (refused) break;
          if (n === 5000)
            throw new Error(
              `the node never refused a ${size}-byte write (maxmemory 1mb)`,
            );
        }
      }
      // Full: a write as small as the lock's is refused now.
      expect(
        await node.set('fill:probe', '1').then(
          () => 'accepted',
          (error: Error) => error.message,
        ),
      ).toMatch(/^OOM/);
    });
    afterAll(async () => {
      await admin[5].config('SET', 'maxmemory', '0');
    });

    it('acquire, tryAcquire and a fenced acquire reject with LockNotAcquiredError (unreachable) naming OOM; nothing written', async () => {
      for (const call of [
        () => redlock.acquire('oom'),
        () => redlock.tryAcquire('oom'),
        () => redlock.acquire('oom', { fencing: true }),
        () => redlock.acquire(['oom:a', 'oom:b']),
      ]) {
        const error = typed<LockNotAcquiredError>(
          await settle(call, 3000),
          'LockNotAcquiredError',
        );
        expect(error.reason).toBe('unreachable');
        expect(errorsOf(error)).toEqual([
          expect.stringMatching(/^error .*OOM/),
        ]);
      }
      const keys = await leftovers(
        [redlock],
        [admin[5]],
        [keyPrefix, metaPrefix],
      );
      expect(keys).toEqual([`${keyPrefix}oom-held`]);
    });

    it('one of three: a fenced lock is still granted, its token from the two others', async () => {
      const three = make([url(0), url(1), url(5)]);
      const lock = fulfilled(
        await settle(() => three.acquire('oom3', { fencing: true })),
      ) as Lock;
      expect(lock.fencingToken).toMatch(/^[1-9][0-9]*$/);
      await lock.release();
      // Node 5 still holds the lock of the test below, taken before it filled up.
      await noneLeft([three], [0, 1]);
      expect(await admin[5].exists(`${keyPrefix}oom3`)).toBe(0);
    });

    it('a lock taken before still extends and releases (PEXPIRE and DEL are allowed when full)', async () => {
      fulfilled(await settle(() => held.extend()));
      expect(fulfilled(await settle(() => held.release()))).toMatchObject({
        released: true,
      });
      await noneLeft([redlock], [5]);
    });

    it('FencedStore on it: rejects with the OOM reply, nothing written', async () => {
      const store = new FencedStore(admin[5], { prefix: `${metaPrefix}f:` });
      const out = await settle(() =>
        store.set({ resource: 'r', token: '1' }, `${keyPrefix}data`, 'v'),
      );
      expect(String((out as { error?: unknown }).error)).toMatch(/OOM/);
      await noneLeft([], [5]);
    });
  });

  describe('NOSCRIPT after SCRIPT FLUSH', () => {
    it('every operation reloads the scripts: extend, release, acquire, fencing, inspect, FencedStore and the watchdog', async () => {
      const redlock = make([url(0), url(1), url(2)]);
      const flush = () =>
        Promise.all(admin.slice(0, 3).map((n) => n.script('FLUSH')));
      const lock = await redlock.acquire('ns');
      await flush();
      fulfilled(await settle(() => lock.extend()));
      await flush();
      expect(fulfilled(await settle(() => lock.release()))).toMatchObject({
        released: true,
      });
      await flush();
      const fenced = fulfilled(
        await settle(() => redlock.acquire('ns', { fencing: true })),
      ) as Lock;
      await flush();
      const store = new FencedStore(admin[0], { prefix: `${metaPrefix}f:` });
      fulfilled(await settle(() => store.claim(fenced)));
      await flush();
      expect(
        (
          fulfilled(await settle(() => redlock.inspect('ns'))) as {
            held: boolean;
          }
        ).held,
      ).toBe(true);
      await fenced.release();
      // The watchdog extends every third of the lease; flush in between.
      const ran = await settle(
        () =>
          redlock.using(
            'ns-watch',
            async (held) => {
              for (let i = 0; i < 4; i++) {
                await flush();
                await new Promise((r) => setTimeout(r, 150));
              }
              return held.isHeld;
            },
            { ttl: 300 },
          ),
        5000,
      );
      expect(fulfilled(ran)).toBe(true);
      await admin[0].del(`${metaPrefix}f:ns`);
      await noneLeft([redlock], [0, 1, 2]);
    });
  });

  describe('a node that closes every connection', () => {
    it('alone: acquire and tryAcquire reject with LockNotAcquiredError (unreachable) within their bound; health down; ready false; quit resolves', async () => {
      const before = accepted;
      const redlock = make([closerUrl]);
      expect(fulfilled(await settle(() => redlock.ready(300)))).toBe(false);
      for (const call of [
        () => redlock.acquire('cl'),
        () => redlock.tryAcquire('cl'),
      ]) {
        const out = await settle(call, 3000);
        expect(
          typed<LockNotAcquiredError>(out, 'LockNotAcquiredError').reason,
        ).toBe('unreachable');
      }
      const health = fulfilled(
        await settle(() => redlock.health(300)),
      ) as RedlockHealth;
      expect(health.healthy).toBe(false);
      const seen = fulfilled(
        await settle(() => redlock.inspect('cl', 300)),
      ) as {
        nodes: { up: boolean }[];
      };
      expect(seen.nodes[0].up).toBe(false);
      fulfilled(await settle(() => redlock.quit(), 3000));
      expect(accepted).toBeGreaterThan(before);
    });

    it('one of three: locks work on the other two; quit resolves', async () => {
      const redlock = make([url(0), url(1), closerUrl]);
      const lock = fulfilled(
        await settle(() => redlock.acquire('cl3')),
      ) as Lock;
      fulfilled(await settle(() => lock.extend()));
      expect(fulfilled(await settle(() => lock.release()))).toMatchObject({
        released: true,
      });
      await noneLeft([redlock], [0, 1]);
      fulfilled(await settle(() => redlock.quit(), 3000));
    });

    it('a real node killing every client connection every 5 ms (CLIENT KILL in a loop): 30 locks in a row on three nodes all granted; no key outlives its lease', async () => {
      const redlock = make([url(0), url(1), url(2)], { ttl: 1000 });
      let killing = true;
      const killer = (async () => {
        let kills = 0;
        while (killing) {
          kills += Number(
            await admin[2].call(
              'CLIENT',
              'KILL',
              'TYPE',
              'normal',
              'SKIPME',
              'yes',
            ),
          );
          await new Promise((r) => setTimeout(r, 5));
        }
        return kills;
      })();
      let granted = 0;
      try {
        for (let i = 0; i < 30; i++) {
          const lock = fulfilled(
            await settle(() => redlock.acquire(`kill:${i % 3}`), 3000),
          ) as Lock;
          granted++;
          await settle(() => lock.release(), 3000);
        }
      } finally {
        killing = false;
      }
      expect(await killer).toBeGreaterThan(0);
      expect(granted).toBe(30);
      await noneLeft([redlock], [0, 1]);
      // A release cut off on the killing node leaves its key to expire.
      await new Promise((r) => setTimeout(r, 1100));
      await noneLeft([], [2]);
    });

    it('a real node with maxclients 1 (connections refused with an error, then closed): unreachable, nothing written', async () => {
      await admin[2].config('SET', 'maxclients', '1');
      try {
        const redlock = make([url(2)]);
        typed(
          await settle(() => redlock.tryAcquire('mc'), 3000),
          'LockNotAcquiredError',
        );
        fulfilled(await settle(() => redlock.quit(), 3000));
      } finally {
        await admin[2].config('SET', 'maxclients', '10000');
      }
      await noneLeft([], [2]);
    });
  });
});
