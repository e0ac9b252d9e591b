import { describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { Lock } from 'nestjs-redlock';
import { flushed, uniquePrefix, watchCommands } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import { ACQUIRE_SCRIPT } from '../../lib/core/scripts/index.js';

// What a burst of requests sends once the nodes lost their scripts (as
// after a restart without persistence): each script's source once per
// node, then calls by SHA. Own servers: the tests flush the nodes' scripts
// and count the commands they run. A burst past the node timeout, and who
// gets what: test/correctness/burst.spec.ts.
describe('a burst of requests after the nodes lost their scripts', () => {
  const { admin, prefixed } = ownNodes(3);

  it('after the nodes lost their scripts, a burst of acquires sends each script source once per node, and every acquire is granted', async () => {
    const prefix = uniquePrefix('noscript');
    const redlock = prefixed(prefix);
    await (await redlock.acquire('warm')).release();
    // Every request sent so far has run (releases settle at a quorum).
    await flushed(redlock);
    // As after a restart without persistence: the script cache is empty.
    await Promise.all(admin.map((c) => c.script('FLUSH')));
    // The sources this instance sends, per node and script (counted on its
    // own clients: the servers' command counts include other clients).
    const sources = redlock.nodes.map(() => new Map<string, number>());
    redlock.nodes.forEach(({ client }, i) =>
      watchCommands(client, (command) => {
        if (command.name !== 'eval') return;
        const name =
          command.args[0] === ACQUIRE_SCRIPT.source ? 'acquire' : 'other';
        sources[i].set(name, (sources[i].get(name) ?? 0) + 1);
      }),
    );
    const locks = await Promise.all(
      Array.from({ length: 300 }, (_, i) => redlock.acquire(`cold:${i}`)),
    );
    expect(locks.every((lock) => lock.isHeld)).toBe(true);
    // The acquire script's source once per node (the old code sent it 300
    // times per node); the other requests that met NOSCRIPT ran by SHA
    // once it was loaded. On a loaded machine an attempt may also have
    // taken its grants back, sending the release script's source: once at
    // most.
    for (const perNode of sources) {
      expect(perNode.get('acquire')).toBe(1);
      expect(perNode.get('other') ?? 0).toBeLessThanOrEqual(1);
    }
    const released = await Promise.all(locks.map((lock) => lock.release()));
    expect(released.filter((r) => !r.released)).toEqual([]);
    // The slowest node's releases met NOSCRIPT too and were sent again once
    // the source was in: after the first flush's PING.
    await flushed(redlock);
    await flushed(redlock);
    expect(
      (await Promise.all(admin.map((c) => scanKeys(c, `${prefix}*`)))).flat(),
    ).toEqual([]);
    await redlock.quit();
  });

  it('after the nodes lost their scripts, the watchdog sends the extend script once per node, not once per batch, and keeps every lock', async () => {
    const prefix = uniquePrefix('noscript-watch');
    const redlock = prefixed(prefix, { ttl: 1000 });
    // 1,200 locks: three extend calls per node and tick (500 locks each).
    const locks: Lock[] = [];
    for (let i = 0; i < 1200; i += 400)
      locks.push(
        ...(await Promise.all(
          Array.from({ length: 400 }, (_, j) =>
            redlock.acquire(`watched:${i + j}`),
          ),
        )),
      );
    await flushed(redlock);
    await Promise.all(admin.map((c) => c.script('FLUSH')));
    await Promise.all(admin.map((c) => c.config('RESETSTAT')));
    const stops = locks.map((lock) => redlock.watch(lock));
    // Past the first lease: the locks are held only if extended.
    await new Promise((r) => setTimeout(r, 1200));
    expect(locks.filter((lock) => !lock.isHeld)).toEqual([]);
    const calls = async (node: Redis, command: string) =>
      Number(
        new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(
          await node.info('commandstats'),
        )?.[1] ?? 0,
      );
    for (const node of admin) {
      // The source once (SCRIPT LOAD), then by SHA. Before: one EVAL with
      // the source per batch, three per node.
      expect(await calls(node, 'eval')).toBe(0);
      expect(await calls(node, 'script\\|load')).toBe(1);
      expect(await calls(node, 'evalsha')).toBeGreaterThanOrEqual(3);
    }
    stops.forEach((stop) => stop());
    await Promise.all(locks.map((lock) => lock.release()));
    await redlock.quit();
  });
});
