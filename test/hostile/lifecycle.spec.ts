import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  LockService,
  Redlock,
  type Lock,
  type LockExtendError,
  type LockNotAcquiredError,
  type LockServiceUnavailableError,
  type RedlockHealth,
  type ReleaseResult,
} from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';
import {
  fulfilled,
  leftovers,
  noUnhandledRejections,
  settle,
  sleep,
  typed,
} from './harness.js';

// Misuse of a lock's life: release twice, release or extend after expiry,
// extend a lock someone else now holds, and every call after quit().

describe('hostile lock lifecycles (five shared nodes)', () => {
  noUnhandledRejections();
  const keyPrefix = uniquePrefix('hl');
  const metaPrefix = uniquePrefix('hlm');
  const make = () =>
    new Redlock({
      clients: quorumUrls(),
      keyPrefix,
      metaPrefix,
      ttl: 2000,
      logger: { warn: () => undefined },
    });
  let redlock: Redlock;
  let other: Redlock;
  let nodes: Redis[];

  beforeAll(() => {
    redlock = make();
    other = make();
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await redlock.quit();
    await other.quit();
    await closeAll(nodes);
  });
  const noneLeft = async (...instances: Redlock[]) => {
    expect(
      await leftovers([redlock, other, ...instances], nodes, [
        keyPrefix,
        metaPrefix,
      ]),
    ).toEqual([]);
  };
  const valuesOn = async (key: string) =>
    Promise.all(nodes.map((n) => n.get(key)));

  it('release twice: the second call returns the first result, sends nothing, never rejects', async () => {
    const lock = await redlock.acquire('twice');
    const first = fulfilled(await settle(() => lock.release()));
    const second = fulfilled(await settle(() => lock.release()));
    expect(second).toBe(first);
    expect(first).toMatchObject({ released: true });
    await noneLeft();
  });

  it('release after expiry: resolves { released: false, expired: true }; a new holder keeps its key', async () => {
    const lock = await redlock.acquire('late', { ttl: 100 });
    await sleep(150);
    const next = await other.acquire('late');
    const result = fulfilled(
      await settle(() => lock.release()),
    ) as ReleaseResult;
    expect(result).toMatchObject({ released: false, expired: true });
    await flushed(redlock);
    expect((await valuesOn(next.keys[0])).every((v) => v === next.value)).toBe(
      true,
    );
    await next.release();
    await noneLeft();
  });

  it('extend after expiry: LockExtendError, the signal aborts with LockLostError, nothing re-created', async () => {
    const lock = await redlock.acquire('expired', { ttl: 100 });
    await sleep(150);
    const error = typed<LockExtendError>(
      await settle(() => lock.extend(1000)),
      'LockExtendError',
    );
    expect(error.reason).toMatch(/validity ran out/);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toMatchObject({ name: 'LockLostError' });
    await noneLeft();
  });

  it('extend a lost lock (another holder took the key): LockExtendError, lost, the other holder untouched', async () => {
    const lock = await redlock.acquire('stolen', { ttl: 100 });
    await sleep(150);
    // Past the validity the library refuses before asking; make it look
    // alive, as a paused process that wakes up would see it.
    lock.deadline = redlock.clock.now() + 1000;
    const thief = await other.acquire('stolen');
    const error = typed<LockExtendError>(
      await settle(() => lock.extend()),
      'LockExtendError',
    );
    expect(error.nodes.filter((n) => n.outcome === 'granted')).toHaveLength(0);
    expect(lock.signal.aborted).toBe(true);
    await flushed(redlock);
    expect(
      (await valuesOn(thief.keys[0])).every((v) => v === thief.value),
    ).toBe(true);
    // Its release deletes nothing of the thief's either.
    expect(await lock.release()).toMatchObject({ released: false });
    await flushed(redlock);
    expect(
      (await valuesOn(thief.keys[0])).every((v) => v === thief.value),
    ).toBe(true);
    await thief.release();
    await noneLeft();
  });

  it('extend after release: LockExtendError, nothing re-created', async () => {
    const lock = await redlock.acquire('gone');
    await lock.release();
    typed(await settle(() => lock.extend()), 'LockExtendError');
    await noneLeft();
  });

  describe('every call after quit()', () => {
    let closed: Redlock;
    let service: LockService;
    let held: Lock;
    let waiting: Promise<unknown>;
    beforeAll(async () => {
      closed = make();
      service = new LockService(closed);
      held = await closed.acquire('held-at-quit');
      const blocker = await other.acquire('waited-at-quit');
      waiting = settle(() => closed.acquire('waited-at-quit'), 5000);
      await sleep(100);
      fulfilled(await settle(() => closed.quit(), 8000));
      await blocker.release();
    });

    it('quit() released the held lock and ended the waiting acquire (reason closed)', async () => {
      expect(held.isHeld).toBe(false);
      const error = typed<LockNotAcquiredError>(
        (await waiting) as never,
        'LockNotAcquiredError',
      );
      expect(error.reason).toBe('closed');
      await noneLeft();
    });

    it.each([
      ['Redlock.acquire', () => closed.acquire('after')],
      ['Redlock.tryAcquire', () => closed.tryAcquire('after')],
      ['Redlock.using', () => closed.using('after', () => 1)],
    ])('%s: LockNotAcquiredError, reason closed, 503', async (_name, call) => {
      const error = typed<LockNotAcquiredError>(
        await settle(call),
        'LockNotAcquiredError',
      );
      expect([error.reason, error.statusCode]).toEqual(['closed', 503]);
      await noneLeft();
    });

    it.each([
      ['LockService.acquire', () => service.acquire('after')],
      ['LockService.tryAcquire', () => service.tryAcquire('after')],
      ['LockService.run', () => service.run('after', () => 1)],
    ])(
      '%s: LockServiceUnavailableError, reason shutdown, 503',
      async (_name, call) => {
        const error = typed<LockServiceUnavailableError>(
          await settle(call),
          'LockServiceUnavailableError',
        );
        expect([error.reason, error.statusCode]).toEqual(['shutdown', 503]);
        await noneLeft();
      },
    );

    it('health(): every node down (closed); ready(): false; inspect(): nodes down; quit() again: resolves', async () => {
      const health = fulfilled(
        await settle(() => closed.health()),
      ) as RedlockHealth;
      expect(health.healthy).toBe(false);
      expect(health.nodes.every((n) => !n.up)).toBe(true);
      expect(fulfilled(await settle(() => closed.ready(100)))).toBe(false);
      const seen = fulfilled(await settle(() => closed.inspect('after'))) as {
        held: boolean;
        nodes: { up: boolean }[];
      };
      expect(seen.held).toBe(false);
      expect(seen.nodes.every((n) => !n.up)).toBe(true);
      fulfilled(await settle(() => closed.quit()));
    });

    it('the lock held at quit: release() returns quit’s result, extend() rejects with LockExtendError', async () => {
      const result = fulfilled(
        await settle(() => held.release()),
      ) as ReleaseResult;
      expect(result.released).toBe(true);
      typed(await settle(() => held.extend()), 'LockExtendError');
      await noneLeft();
    });
  });
});
