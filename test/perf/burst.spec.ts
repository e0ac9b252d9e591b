import { describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { LockNotAcquiredError, type Lock } from 'nestjs-redlock';
import { flushed, uniquePrefix, watchCommands } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import { ACQUIRE_SCRIPT } from '../../lib/core/scripts/index.js';

// Thousands of locks released in one tick (a batch job ending, a shutdown)
// keep a node busy longer than the node timeout (100 ms by default). A node
// that keeps answering is busy, not down: its late answers still count.
// Own servers: one of them is frozen.
describe('a burst of requests past the node timeout', () => {
  const { servers, admin, prefixed } = ownNodes(3);
  const count = 5000;

  const holdMany = async (prefix: string, warnings: string[]) => {
    const redlock = prefixed(prefix, {
      ttl: 30_000,
      logger: { warn: (message: string) => warnings.push(message) },
    });
    // Scripts loaded: the burst measures answers, not the NOSCRIPT path.
    await (await redlock.acquire('warm')).release();
    const locks: Lock[] = [];
    for (let i = 0; i < count; i += 500)
      locks.push(
        ...(await Promise.all(
          Array.from({ length: 500 }, (_, j) =>
            redlock.acquire(`many:${i + j}`),
          ),
        )),
      );
    return { redlock, locks };
  };

  it('5,000 locks released at once are all reported released, with no warning, and no key is left', async () => {
    const warnings: string[] = [];
    const prefix = uniquePrefix('burst');
    const { redlock, locks } = await holdMany(prefix, warnings);
    const results = await Promise.all(locks.map((lock) => lock.release()));
    // Each settles once a quorum deleted its key.
    expect(results.filter((r) => !r.released)).toEqual([]);
    expect(warnings).toEqual([]);
    await flushed(redlock);
    for (const client of admin)
      expect(await scanKeys(client, `${prefix}many:*`)).toEqual([]);
  });

  it('quit() during a burst of acquires lets them finish and take back what they were granted: no key is left but those of locks handed out', async () => {
    const prefix = uniquePrefix('quitburst');
    // A short node timeout: quit() waited at most two of them (+50 ms)
    // for attempts in flight, far less than the nodes take to work through
    // the burst; then it closed the connections under their clean-up.
    const redlock = prefixed(prefix, { ttl: 30_000, nodeTimeout: 50 });
    await (await redlock.acquire('warm')).release();
    const calls = Array.from({ length: count }, (_, i) =>
      i % 2 ? redlock.acquire(`many:${i}`) : redlock.tryAcquire(`many:${i}`),
    );
    const settled = Promise.allSettled(calls);
    // Every request is written before quit() runs.
    await new Promise((resolve) => setImmediate(resolve));
    await redlock.quit();
    const handedOut = new Set<string>();
    let refused = 0;
    for (const outcome of await settled) {
      if (outcome.status === 'fulfilled') {
        for (const key of outcome.value?.keys ?? []) handedOut.add(key);
      } else {
        // 'closed', or 'unreachable' for an attempt whose nodes were too
        // slow even for a busy node's wait (a loaded machine).
        expect(outcome.reason).toBeInstanceOf(LockNotAcquiredError);
        refused++;
      }
    }
    for (const client of admin) {
      const left = await scanKeys(client, `${prefix}many:*`);
      expect(left.filter((key) => !handedOut.has(key))).toEqual([]);
    }
    // quit() came before most answers: the test is about those.
    expect(refused).toBeGreaterThan(calls.length / 2);
  });

  it('a node frozen during the burst is still given up on: the releases settle with the others', async () => {
    const warnings: string[] = [];
    const { locks } = await holdMany(uniquePrefix('frozen'), warnings);
    servers[2].freeze();
    try {
      const results = await Promise.all(locks.map((lock) => lock.release()));
      expect(results.filter((r) => !r.released)).toEqual([]);
      const frozen = new Set(results.map((r) => r.nodes[2].outcome));
      // Settled at a quorum of the other two, or timed out waiting for it.
      expect(frozen.has('granted')).toBe(false);
    } finally {
      servers[2].thaw();
    }
  });
});

// Own servers: the burst above leaves a frozen node's backlog, which may
// load the scripts again after this test flushed them.
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
