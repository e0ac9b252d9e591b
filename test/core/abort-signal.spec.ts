import { describe, expect, it } from '@jest/globals';
import { RedlockConfigError, type Redlock } from 'nestjs-redlock';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import { flushed, scriptCalls, uniquePrefix } from '../utils/nodes.js';
import { ownNodes } from '../utils/own-nodes.js';

// `signal` in AcquireOptions: the caller gives up wherever its acquire is,
// and nothing granted after the abort is handed out or left on the nodes.
// Own servers: two of them are frozen.
describe('acquire and tryAcquire with an AbortSignal', () => {
  const { servers, admin, prefixed } = ownNodes(3);

  /** An instance with its own key and meta prefixes, to scan for leftovers. */
  const instance = (options: Parameters<typeof prefixed>[1] = {}) => {
    const prefix = uniquePrefix('abort');
    const redlock = prefixed(prefix, { metaPrefix: `m${prefix}`, ...options });
    return { redlock, prefix };
  };

  /** Every key of the instance (locks, wait queues) left on any node. */
  const leftovers = async (redlock: Redlock, prefix: string) => {
    await flushed(redlock);
    const left: string[] = [];
    for (const client of admin)
      left.push(
        ...(await scanKeys(client, `${prefix}*`)),
        ...(await scanKeys(client, `m${prefix}*`)),
      );
    return left;
  };

  const reasonOf = (label: string) => new Error(`caller went away: ${label}`);

  it('an aborted signal rejects at once with its reason, before any Redis call', async () => {
    const { redlock } = instance();
    await redlock.ready();
    const before = await scriptCalls(admin);
    const reason = reasonOf('before');
    const signal = AbortSignal.abort(reason);
    await expect(redlock.acquire('r', { signal })).rejects.toBe(reason);
    await expect(redlock.tryAcquire('r', { signal })).rejects.toBe(reason);
    expect(await scriptCalls(admin)).toBe(before);
  });

  it('a signal that aborted without a reason (a polyfill) still stops the call, with an AbortError', async () => {
    const { redlock } = instance();
    await redlock.ready();
    const before = await scriptCalls(admin);
    const signal = {
      aborted: true,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
    } as unknown as AbortSignal;
    for (const call of [
      () => redlock.acquire('r', { signal }),
      () => redlock.tryAcquire('r', { signal }),
    ]) {
      const error = await call().then(
        (lock) => lock,
        (e: unknown) => e,
      );
      expect((error as Error).name).toBe('AbortError');
    }
    expect(await scriptCalls(admin)).toBe(before);
  });

  it('a signal that is not an AbortSignal is refused, naming options.signal', async () => {
    const { redlock } = instance();
    for (const call of [
      () => redlock.acquire('r', { signal: 'soon' as never }),
      () => redlock.tryAcquire('r', { signal: {} as never }),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).field).toBe('options.signal');
      expect((error as Error).message).toMatch(/must be an AbortSignal/);
    }
  });

  it('a waiter on the nodes gives up with the reason, leaves their queues, and the key goes on to the next caller', async () => {
    const { redlock: holderSide, prefix } = instance();
    // Another instance: its caller waits on the nodes, not in the process.
    const waiterSide = prefixed(prefix, { metaPrefix: `m${prefix}` });
    const holder = await holderSide.acquire('hot');
    const controller = new AbortController();
    const waiting = waiterSide.acquire('hot', {
      signal: controller.signal,
      waitTimeout: 10_000,
    });
    const queued = async () => {
      for (const client of admin)
        if ((await scanKeys(client, `m${prefix}*`)).length === 0) return false;
      return true;
    };
    while (!(await queued())) await new Promise((r) => setTimeout(r, 10));
    const reason = reasonOf('waiting on the nodes');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await holder.release();
    // Nobody waits now: a newcomer gets the key at once.
    const next = await waiterSide.tryAcquire('hot');
    expect(next).not.toBeNull();
    await next!.release();
    expect(await leftovers(holderSide, prefix)).toEqual([]);
  });

  it('a caller waiting in the process gives up with the reason; the holder release is not handed to it', async () => {
    const { redlock, prefix } = instance();
    const holder = await redlock.acquire('local');
    const controller = new AbortController();
    const waiting = redlock.acquire('local', { signal: controller.signal });
    await flushed(redlock);
    const reason = reasonOf('waiting in the process');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    const released = await holder.release();
    expect(released.released).toBe(true);
    expect(released.deferred ?? false).toBe(false);
    expect(await leftovers(redlock, prefix)).toEqual([]);
  });

  it("aborted and then quit() while a refused attempt is out: rejects with the caller's reason, not as closed", async () => {
    const { redlock: holderSide, prefix } = instance();
    const waiterSide = prefixed(prefix, {
      metaPrefix: `m${prefix}`,
      nodeTimeout: 5000,
    });
    await waiterSide.ready();
    const holder = await holderSide.acquire('busy');
    await flushed(holderSide);
    const controller = new AbortController();
    const reason = reasonOf('then quit');
    let quitting: Promise<void> | undefined;
    let waiting: Promise<unknown>;
    // Two of three nodes hold their answers: the attempt (refused by the
    // third, which queues the waiter) stays out while the caller aborts
    // and the instance quits.
    servers[1].freeze();
    servers[2].freeze();
    try {
      waiting = waiterSide.acquire('busy', {
        signal: controller.signal,
        waitTimeout: 10_000,
      });
      waiting.catch(() => undefined);
      while ((await scanKeys(admin[0], `m${prefix}*`)).length === 0)
        await new Promise((r) => setTimeout(r, 10));
      controller.abort(reason);
      quitting = waiterSide.quit();
    } finally {
      servers[1].thaw();
      servers[2].thaw();
    }
    await expect(waiting).rejects.toBe(reason);
    await quitting;
    await holder.release();
    expect(await leftovers(holderSide, prefix)).toEqual([]);
  });

  for (const method of ['acquire', 'tryAcquire'] as const)
    it(`${method}: keys granted after the abort, while the attempt was out, are taken back and no lock is returned`, async () => {
      const { redlock, prefix } = instance({ nodeTimeout: 5000 });
      await redlock.ready();
      // Two of three nodes hold their answers: the attempt stays out until
      // they are thawed, after the abort, and then grants a quorum.
      servers[1].freeze();
      servers[2].freeze();
      const controller = new AbortController();
      let outcome: Promise<unknown>;
      try {
        outcome = redlock[method]('slow', { signal: controller.signal });
        outcome.catch(() => undefined);
        while ((await admin[0].exists(`${prefix}slow`)) === 0)
          await new Promise((r) => setTimeout(r, 10));
        controller.abort(reasonOf(method));
      } finally {
        servers[1].thaw();
        servers[2].thaw();
      }
      await expect(outcome).rejects.toThrow(`caller went away: ${method}`);
      expect(await leftovers(redlock, prefix)).toEqual([]);
    });
});
