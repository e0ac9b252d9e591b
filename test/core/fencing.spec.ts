import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  compareFencingTokens,
  fenceCounterKey,
  isFencingToken,
  LockService,
  Redlock,
  RedlockConfigError,
} from 'nestjs-redlock';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import {
  closeAll,
  inspect,
  quorumUrls,
  uniquePrefix,
  watchCommands,
} from '../utils/nodes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const big = (token: string | undefined) => BigInt(token!);

describe('fencing tokens on five nodes', () => {
  const prefix = uniquePrefix('fence');
  const metaPrefix = uniquePrefix('meta');
  let redlock: Redlock;
  let fenced: Redlock;
  let nodes: Redis[];

  beforeAll(() => {
    redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      metaPrefix,
      ttl: 2000,
    });
    fenced = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      metaPrefix,
      ttl: 2000,
      fencing: true,
    });
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await redlock.quit();
    await fenced.quit();
    await closeAll(nodes);
  });

  it('gives a fenced lock a decimal-string token, greater at each acquire, stored as the counter on every node', async () => {
    let previous = -1n;
    for (let i = 0; i < 5; i++) {
      const lock = await redlock.acquire('order:1', { fencing: true });
      expect(isFencingToken(lock.fencingToken)).toBe(true);
      expect(big(lock.fencingToken)).toBeGreaterThan(previous);
      previous = big(lock.fencingToken);
      expect([...lock.fencingTokens!]).toEqual([
        ['order:1', lock.fencingToken],
      ]);
      await lock.release();
    }
    await sleep(20); // the write-back to the nodes past the quorum lands
    const key = fenceCounterKey(metaPrefix, `${prefix}order:1`);
    for (const node of nodes)
      expect(await node.get(key)).toBe(String(previous));
    // Counters live under metaPrefix, never under the lock prefix.
    expect(key.startsWith(metaPrefix)).toBe(true);
    expect(key.startsWith(prefix)).toBe(false);
  });

  it('leaves unfenced locks without tokens and writes no counter for them', async () => {
    const lock = await redlock.acquire('plain');
    expect(lock.fencingToken).toBeUndefined();
    expect(lock.fencingTokens).toBeUndefined();
    await lock.release();
    for (const node of nodes)
      expect(await scanKeys(node, `${metaPrefix}fence:${prefix}plain`)).toEqual(
        [],
      );
  });

  it('takes the module default and lets a call override it either way', async () => {
    const byDefault = await fenced.acquire('defaults');
    expect(byDefault.fencingToken).toBeDefined();
    await byDefault.release();
    const optedOut = await fenced.acquire('defaults', { fencing: false });
    expect(optedOut.fencingToken).toBeUndefined();
    await optedOut.release();
    const tried = await fenced.tryAcquire('defaults');
    expect(big(tried!.fencingToken)).toBeGreaterThan(
      big(byDefault.fencingToken),
    );
    await tried!.release();
  });

  it('costs one more request per node with fencing and none without', async () => {
    const clients = quorumUrls().map(
      (url) => new Redis(url, { maxRetriesPerRequest: 0 }),
    );
    const sent = clients.map(() => 0);
    clients.forEach((client, i) =>
      watchCommands(client, (command) => {
        if (command.name === 'evalsha') sent[i]++;
      }),
    );
    const counting = new Redlock({ clients, keyPrefix: prefix, metaPrefix });
    try {
      const plain = await counting.acquire('cost');
      expect(sent).toEqual([1, 1, 1, 1, 1]);
      await plain.release();
      sent.fill(0);
      const lock = await counting.acquire('cost', { fencing: true });
      expect(sent).toEqual([2, 2, 2, 2, 2]);
      await lock.release();
    } finally {
      await closeAll(clients);
    }
  });

  it('gives a multi-resource lock one token per resource, each following its own resource', async () => {
    const first = await redlock.acquire(['multi:b', 'multi:a'], {
      fencing: true,
    });
    expect(first.fencingToken).toBeUndefined();
    expect([...first.fencingTokens!.keys()]).toEqual(['multi:a', 'multi:b']);
    await first.release();
    // Only multi:a moves; multi:b keeps its count.
    for (let i = 0; i < 3; i++) {
      const lock = await redlock.acquire('multi:a', { fencing: true });
      await lock.release();
    }
    const second = await redlock.acquire(['multi:a', 'multi:b'], {
      fencing: true,
    });
    const a1 = big(first.fencingTokens!.get('multi:a'));
    const b1 = big(first.fencingTokens!.get('multi:b'));
    expect(big(second.fencingTokens!.get('multi:a'))).toBe(a1 + 4n);
    expect(big(second.fencingTokens!.get('multi:b'))).toBe(b1 + 1n);
    await second.release();
  });

  it('orders tokens by grant under contention: every holder gets a greater one than all before it', async () => {
    const contenders = Array.from(
      { length: 4 },
      () =>
        new Redlock({
          clients: quorumUrls(),
          keyPrefix: prefix,
          metaPrefix,
          ttl: 2000,
          fencing: true,
          retryDelay: 5,
          retryJitter: 10,
        }),
    );
    const seen: string[] = [];
    let holders = 0;
    let overlaps = 0;
    try {
      await Promise.all(
        contenders.map(async (c) => {
          for (let i = 0; i < 25; i++) {
            const lock = await c.acquire('contended', { waitTimeout: 10_000 });
            if (++holders > 1) overlaps++;
            seen.push(lock.fencingToken!);
            await sleep(Math.random() * 3);
            holders--;
            await lock.release();
          }
        }),
      );
    } finally {
      await Promise.all(contenders.map((c) => c.quit()));
    }
    expect(overlaps).toBe(0);
    expect(seen).toHaveLength(100);
    const backwards = seen.filter(
      (t, i) => i > 0 && compareFencingTokens(t, seen[i - 1]) <= 0,
    );
    expect(backwards).toEqual([]);
  });

  it('hands the token to run() callbacks, through LockService too', async () => {
    const service = new LockService(redlock);
    const token = await service.run('service', (lock) => lock.fencingToken, {
      fencing: true,
    });
    expect(isFencingToken(token)).toBe(true);
    const next = await redlock.using('service', (lock) => lock.fencingToken, {
      fencing: true,
    });
    expect(big(next)).toBeGreaterThan(big(token));
    expect(
      await service.run('service', (lock) => lock.fencingToken),
    ).toBeUndefined();
  });

  it('validates the fencing option, naming the field', async () => {
    expect(
      () =>
        new Redlock({
          clients: quorumUrls(),
          fencing: 'yes' as unknown as boolean,
        }),
    ).toThrow(
      expect.objectContaining({ name: 'RedlockConfigError', field: 'fencing' }),
    );
    const error = await redlock
      .acquire('validate', { fencing: 1 as unknown as boolean })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).field).toBe('options.fencing');
    for (const node of nodes)
      expect(await node.exists(`${prefix}validate`)).toBe(0);
  });

  it('fails the acquire and leaves no lock key when no quorum stores the tokens', async () => {
    // A counter another program overwrote with text refuses every proposal.
    const key = fenceCounterKey(metaPrefix, `${prefix}garbled`);
    await Promise.all(nodes.slice(0, 3).map((n) => n.set(key, 'x')));
    const error = await redlock
      .tryAcquire('garbled', { fencing: true })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'LockNotAcquiredError',
      reason: 'unreachable',
    });
    await sleep(20);
    for (const node of nodes)
      expect(await node.exists(`${prefix}garbled`)).toBe(0);
  });

  it('compares tokens as numbers, at any size', () => {
    expect(compareFencingTokens('9', '10')).toBeLessThan(0);
    expect(compareFencingTokens('10', '10')).toBe(0);
    expect(
      compareFencingTokens('18446744073709551617', '18446744073709551616'),
    ).toBeGreaterThan(0);
    expect(() => compareFencingTokens('010', '1')).toThrow(RedlockConfigError);
    expect(isFencingToken('-1')).toBe(false);
    expect(isFencingToken(42)).toBe(false);
  });
});
