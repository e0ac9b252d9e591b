import { Injectable } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Locked, LockService, Redlock } from 'nestjs-redlock';
import { createApp } from '../fixtures/create-app.js';
import { libraryScripts } from '../utils/declared-keys-check.js';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

const admin = inspect(quorumUrls());
afterAll(() => closeAll(admin));
// Every script cached on every node, as in a deployment that has run a
// while: on fresh servers a node's first EVALSHA of a script answers
// NOSCRIPT and its EVAL follows, after a quorum may have settled the
// release; quit() can close the connection before it (a case of its own,
// for a mutex as well).
beforeAll(async () => {
  for (const { script } of await libraryScripts())
    await Promise.all(admin.map((c) => c.script('LOAD', script.source)));
});

/** Every key under `prefixes` on each node (lock keys, readers, intents, slots). */
async function keysUnder(...prefixes: string[]): Promise<string[][]> {
  return Promise.all(
    admin.map(async (c) =>
      (await Promise.all(prefixes.map((p) => c.keys(`${p}*`)))).flat().sort(),
    ),
  );
}

/** A service that holds a semaphore's permit or a read lock while it works. */
@Injectable()
class ReportsService {
  @Locked('exports', { permits: 2, ttl: 10_000 })
  async export(ms: number): Promise<void> {
    await sleep(ms);
  }

  @Locked('catalogue', { mode: 'read', ttl: 10_000 })
  async read(ms: number): Promise<void> {
    await sleep(ms);
  }
}

describe('shutdown with semaphores and read/write locks', () => {
  it('quit() releases held permits, read and write locks: no key left; health() is unaffected while they are held', async () => {
    const keyPrefix = uniquePrefix('quit-shape');
    const metaPrefix = uniquePrefix('quit-meta');
    const r = new Redlock({ clients: quorumUrls(), keyPrefix, metaPrefix });
    try {
      // Every node connected first: a grant sent to a node still
      // connecting is a case of its own (not of the lock's shape).
      await r.ready();
      await r.acquire('exports', { permits: 3, ttl: 30_000 });
      await r.acquire('exports', { permits: 3, ttl: 30_000 });
      await r.acquire('catalogue', { mode: 'read', ttl: 30_000 });
      await r.acquire('orders', { mode: 'write', ttl: 30_000 });
      // What a quorum answered, every node has done.
      await Promise.all(r.nodes.map((n) => n.client.ping()));
      for (const keys of await keysUnder(keyPrefix, metaPrefix)) {
        expect(keys.filter((k) => k.includes('exports#permit-'))).toHaveLength(
          2,
        );
        expect(keys.filter((k) => !k.includes('exports#permit-'))).toEqual(
          [
            // The semaphore's mark and holders, the readers' mark and set.
            `${keyPrefix}exports`,
            `${metaPrefix}ph:${keyPrefix}exports`,
            `${keyPrefix}catalogue`,
            `${metaPrefix}rd:${keyPrefix}catalogue`,
            `${keyPrefix}orders`,
          ].sort(),
        );
      }
      expect(await r.health()).toMatchObject({
        healthy: true,
        up: admin.length,
      });
      await r.quit();
      expect(await keysUnder(keyPrefix, metaPrefix)).toEqual(
        admin.map(() => []),
      );
    } finally {
      await r.quit();
    }
  });

  it('app.close() releases the permits and read locks of work in progress: another instance gets them at once', async () => {
    const t = await createApp(
      { providers: [ReportsService] },
      { shutdownTimeout: 100 },
    );
    try {
      const reports = t.app.get(ReportsService);
      const work = [
        reports.export(1500),
        reports.export(1500),
        reports.read(1500),
      ].map((p) => p.catch((e: unknown) => e));
      await sleep(150);
      const locks = t.app.get(LockService);
      expect((await locks.health()).healthy).toBe(true);
      expect(
        (await locks.redlock.inspect('exports')).nodes.length,
      ).toBeGreaterThan(0);
      const before = await keysUnder(t.prefix);
      for (const keys of before)
        expect(keys).toEqual(
          [
            `${t.prefix}catalogue`,
            `${t.prefix}exports`,
            `${t.prefix}exports#permit-0`,
            `${t.prefix}exports#permit-1`,
          ].sort(),
        );
      const closing = performance.now();
      await t.app.close();
      // Released at close, not when the work ended or the leases ran out.
      expect(performance.now() - closing).toBeLessThan(1200);
      expect(await keysUnder(t.prefix)).toEqual(admin.map(() => []));
      await Promise.all(work);
      // Released, not expired: another instance writes and takes both
      // permits with no wait.
      const start = performance.now();
      const [a, b, w] = await Promise.all([
        t.other.acquire('exports', { permits: 2, waitTimeout: 0 }),
        t.other.acquire('exports', { permits: 2, waitTimeout: 0 }),
        t.other.acquire('catalogue', { mode: 'write', waitTimeout: 0 }),
      ]);
      expect(performance.now() - start).toBeLessThan(2000);
      await Promise.all([a.release(), b.release(), w.release()]);
    } finally {
      await t.close();
    }
  });
});
