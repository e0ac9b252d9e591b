import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { FencedStore, LockService, Redlock, type Lock } from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  singleUrl,
  uniquePrefix,
} from '../utils/nodes.js';
import {
  fulfilled,
  leftovers,
  noUnhandledRejections,
  settle,
} from './harness.js';

// Hostile resource names through every entry point that takes one, on the
// five shared nodes: each must lock exactly its own key (exclusion holds,
// a waiter is woken by the release), and leave nothing behind.

const MB = 1 << 20;
const TEN_THOUSAND = Array.from({ length: 10_000 }, (_, i) => `r:${i}`);

/** label, resources, a name that must NOT be excluded by the lock (or none). */
const NAMES: [string, string | string[], string | undefined][] = [
  ['a key of 1 MB', 'k'.repeat(MB), 'k'.repeat(MB - 1)],
  ['CRLF in the key', 'a\r\nb\r\n', 'a\nb\n'],
  ['a RESP command in the key', '*1\r\n$8\r\nFLUSHALL\r\n', undefined],
  ['glob characters', 'k*?[a-z]\\', 'kx?a\\'],
  ['a glob that matches everything', '*', 'x'],
  ['braces (a hash tag)', '{user}:1', '{user}:2'],
  ['unicode (Cyrillic, emoji, zero-width)', 'ключ🔒ü\u200b', 'ключ🔒ü'],
  ['a NUL byte', 'a\u0000b', 'a'],
  ['10,000 resources in one lock', TEN_THOUSAND, 'r:10000'],
];

describe('hostile resource names (five shared nodes)', () => {
  noUnhandledRejections();
  const keyPrefix = uniquePrefix('hk');
  const metaPrefix = uniquePrefix('hkm');
  const fencePrefix = uniquePrefix('hkf');
  let redlock: Redlock;
  let other: Redlock;
  let service: LockService;
  let nodes: Redis[];
  let store: FencedStore;
  let storeNode: Redis;

  beforeAll(() => {
    const options = {
      clients: quorumUrls(),
      keyPrefix,
      metaPrefix,
      ttl: 5000,
      // The default node timeout (ttl / 10, at most 100 ms) is short for a
      // 10,000-key script on a loaded machine: nodes answer after it, and a
      // waiter whose attempt timed out on some nodes can miss the release
      // message and sleep until its fallback retry. The waiter test below
      // is about the message, with nodes that answer.
      nodeTimeout: 1000,
      logger: { warn: () => undefined },
    };
    redlock = new Redlock(options);
    other = new Redlock(options);
    service = new LockService(redlock);
    nodes = inspect(quorumUrls());
    storeNode = inspect([singleUrl()])[0];
    store = new FencedStore(storeNode, { prefix: fencePrefix });
  });
  afterAll(async () => {
    await redlock.quit();
    await other.quit();
    await closeAll([...nodes, storeNode]);
  });

  const noneLeft = async () => {
    expect(
      await leftovers(
        [redlock, other],
        nodes,
        [keyPrefix, metaPrefix],
        [`${metaPrefix}fence:`],
      ),
    ).toEqual([]);
  };

  /** How many nodes hold `lock` on its first key. */
  const holding = async (lock: Lock) =>
    (await Promise.all(nodes.map((n) => n.get(lock.keys[0])))).filter(
      (v) => v === lock.value,
    ).length;

  describe.each(NAMES)('%s', (_label, resources, sibling) => {
    const list = typeof resources === 'string' ? [resources] : resources;

    it('Redlock: acquire holds the exact key, excludes it, extends, inspects, releases; nothing left', async () => {
      const lock = fulfilled(
        await settle(() => redlock.acquire(resources), 10_000),
      ) as Lock;
      expect(lock.keys[0]).toBe(keyPrefix + [...list].sort()[0]);
      await flushed(redlock);
      expect(await holding(lock)).toBe(5);
      expect(await settle(() => other.tryAcquire(resources))).toMatchObject({
        status: 'fulfilled',
        value: null,
      });
      if (sibling !== undefined) {
        const free = fulfilled(
          await settle(() => other.tryAcquire(sibling)),
        ) as Lock | null;
        expect(free).not.toBeNull();
        await free?.release();
      }
      fulfilled(await settle(() => lock.extend(), 10_000));
      const seen = fulfilled(await settle(() => redlock.inspect(list[0]))) as {
        held: boolean;
        nodes: { ours?: boolean }[];
      };
      expect(seen.held).toBe(true);
      expect(
        fulfilled(await settle(() => lock.release(), 10_000)),
      ).toMatchObject({ released: true });
      await noneLeft();
    }, 60_000);

    it('a waiter of another instance is woken by the release message', async () => {
      const lock = fulfilled(
        await settle(() => redlock.acquire(resources), 10_000),
      ) as Lock;
      const waiting = settle(
        () =>
          other.acquire(resources, {
            waitTimeout: 8000,
            retryDelay: 5000,
            retryJitter: 0,
          }),
        10_000,
      );
      await new Promise((r) => setTimeout(r, 200));
      const releasedAt = performance.now();
      await lock.release();
      const next = fulfilled(await waiting) as Lock;
      // Woken by the message, not by the fallback retry 5 s later.
      expect(performance.now() - releasedAt).toBeLessThan(2500);
      await next.release();
      await noneLeft();
    }, 60_000);

    it('LockService.run and fencing through FencedStore', async () => {
      const out = await settle(
        () =>
          service.run(
            resources,
            async (lock) => {
              const resource = list[0];
              await store.set(
                { resource, token: lock.fencingTokens!.get(resource)! },
                `${fencePrefix}data`,
                'v',
              );
              return store.highest(resource);
            },
            { fencing: true },
          ),
        20_000,
      );
      expect(fulfilled(out)).toMatch(/^[1-9][0-9]*$/);
      await noneLeft();
    }, 60_000);
  });

  it('a lone UTF-16 surrogate is sent as U+FFFD: names that differ only there share one key (documented)', async () => {
    const lock = fulfilled(
      await settle(() => redlock.acquire('s\uD800')),
    ) as Lock;
    expect(
      fulfilled(await settle(() => other.tryAcquire('s\uDFFF'))),
    ).toBeNull();
    expect(
      fulfilled(await settle(() => other.tryAcquire('s\uFFFD'))),
    ).toBeNull();
    await lock.release();
    await noneLeft();
  });
});
