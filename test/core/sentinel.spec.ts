import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Redlock } from 'nestjs-redlock';
import { freePort, SERVER_BINARY } from '../../scripts/redis-nodes.mjs';
import { flushed, uniquePrefix } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';

// A node reached through Sentinel (RedisOptions with `sentinels`): the
// client asks a real redis-server in sentinel mode for the master's
// address. Own servers, and one sentinel monitoring the first of them.
describe('a node reached through Sentinel', () => {
  const { servers, admin } = ownNodes(3);
  let sentinel: ChildProcess;
  let sentinelPort: number;
  let dir: string;
  const quiet = { warn: () => undefined };

  beforeAll(async () => {
    sentinelPort = await freePort();
    dir = mkdtempSync(join(tmpdir(), 'redlock-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    // Sentinel rewrites its configuration file: it must be its own.
    writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor locks 127.0.0.1 ${servers[0].port} 1`,
        '',
      ].join('\n'),
    );
    // The server under test (REDLOCK_SERVER, else redis-server on PATH) in
    // sentinel mode: Redis and Valkey servers both have it built in.
    sentinel = spawn(SERVER_BINARY, [conf, '--sentinel'], { stdio: 'ignore' });
    // Ready once it names the master it monitors.
    const probe = new Redis(sentinelPort, '127.0.0.1', {
      retryStrategy: () => 50,
      maxRetriesPerRequest: null,
    });
    try {
      for (let i = 0; i < 200; i++) {
        const address = (await probe
          .call('SENTINEL', 'get-master-addr-by-name', 'locks')
          .catch(() => null)) as string[] | null;
        if (address?.[1] === String(servers[0].port)) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the sentinel did not come up');
    } finally {
      await probe.quit().catch(() => probe.disconnect());
    }
  });

  afterAll(() => {
    sentinel?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const make = (keyPrefix: string) =>
    new Redlock({
      clients: [
        {
          sentinels: [{ host: '127.0.0.1', port: sentinelPort }],
          name: 'locks',
        },
        servers[1].url,
        servers[2].url,
      ],
      keyPrefix,
      logger: quiet,
    });

  it('locks on the master the sentinel names, and wakes a waiter through it, named after the master group', async () => {
    const prefix = uniquePrefix('sentinel');
    const holderSide = make(prefix);
    const waiterSide = make(prefix);
    try {
      expect(holderSide.nodes[0].name).toBe('sentinel:locks');
      // ready() resolves at a quorum: wait for the sentinel's node too,
      // so that every request below reaches it.
      for (const side of [holderSide, waiterSide]) {
        const viaSentinel = side.nodes[0].client;
        for (let i = 0; i < 200 && viaSentinel.status !== 'ready'; i++)
          await new Promise((r) => setTimeout(r, 10));
        expect(viaSentinel.status).toBe('ready');
      }
      const held = await holderSide.acquire('sku');
      await flushed(holderSide);
      // Written on the master behind the sentinel, as on the plain nodes.
      expect(
        await Promise.all(admin.map((c) => c.get(`${prefix}sku`))),
      ).toEqual([held.value, held.value, held.value]);
      const waiting = waiterSide.acquire('sku', {
        retryDelay: 5000,
        retryJitter: 0,
        waitTimeout: 8000,
      });
      // The waiter listens on the master behind the sentinel as well (its
      // subscriber is a duplicate of the sentinel client), once subscribed.
      const channels = async () =>
        (await admin[0].call('PUBSUB', 'CHANNELS', 'redlock:w:*')) as string[];
      for (
        const until = Date.now() + 5000;
        (await channels()).length === 0 && Date.now() < until;
      )
        await new Promise((r) => setTimeout(r, 20));
      expect(await channels()).toHaveLength(1);
      const start = Date.now();
      await held.release();
      const lock = await waiting;
      // Woken by the release message (its retry was 5 s away).
      expect(Date.now() - start).toBeLessThan(3000);
      // The release settles at a quorum: the last node may still be
      // deleting the holder's key (and giving it to the waiter).
      await flushed(holderSide);
      expect(await admin[0].get(`${prefix}sku`)).toBe(lock.value);
      await lock.release();
      await flushed(waiterSide);
      expect(
        await Promise.all(admin.map((c) => c.exists(`${prefix}sku`))),
      ).toEqual([0, 0, 0]);
    } finally {
      await Promise.all([holderSide.quit(), waiterSide.quit()]);
    }
  });
});
