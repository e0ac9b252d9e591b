import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import {
  type Lock,
  Locked,
  LockNotAcquiredError,
  LockService,
  LockShapeError,
  RedlockConfigError,
} from 'nestjs-redlock';
import type { Redis } from 'ioredis';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { sleep, Tracker } from '../fixtures/tracker.js';
import { closeAll, inspect, quorumUrls, settledTo } from '../utils/nodes.js';

/** The permits of the payment provider: at most this many calls at once, across replicas. */
const PSP_PERMITS = 8;

/* eslint-disable @typescript-eslint/require-await */
@Injectable()
class PaymentsService {
  constructor(
    readonly tracker: Tracker,
    private readonly locks: LockService,
  ) {}

  @Locked('psp:<merchantId>', {
    permits: PSP_PERMITS,
    waitTimeout: 20_000,
    retryDelay: 10,
    retryJitter: 10,
  })
  async charge(merchantId: string, ms: number): Promise<string> {
    return this.tracker.section('charge', [`psp:${merchantId}`], async () => {
      await sleep(ms);
      return this.locks.current()!.resources[0];
    });
  }

  @Locked('psp:<merchantId>', {
    permits: PSP_PERMITS,
    waitTimeout: 0,
    onNotAcquired: 'skip',
  })
  async chargeOrSkip(merchantId: string): Promise<string> {
    return this.tracker.section('chargeOrSkip', [], () => `ran ${merchantId}`);
  }

  /** A charge that refunds a part in a nested call on the same semaphore. */
  @Locked('psp:<merchantId>', { permits: PSP_PERMITS })
  async chargeAndRefund(
    merchantId: string,
    inner: (id: string) => Promise<unknown>,
  ): Promise<{ outer: Lock; inner: unknown }> {
    const outer = this.locks.current()!;
    return { outer, inner: await inner(merchantId) };
  }

  @Locked('psp:<merchantId>', { permits: PSP_PERMITS, waitTimeout: 100 })
  async refund(merchantId: string): Promise<Lock> {
    void merchantId;
    return this.locks.current()!;
  }

  @Locked('psp:<merchantId>', { permits: 4, waitTimeout: 100 })
  async refundWithFourPermits(merchantId: string): Promise<Lock> {
    void merchantId;
    return this.locks.current()!;
  }

  @Locked('psp:<merchantId>', { waitTimeout: 100 })
  async refundAsMutex(merchantId: string): Promise<Lock> {
    void merchantId;
    return this.locks.current()!;
  }
}

describe('semaphores (permits) through @Locked and LockService on real nodes', () => {
  const tracker = new Tracker();
  const metadata = {
    providers: [{ provide: Tracker, useValue: tracker }, PaymentsService],
  };
  let t: TestApp;
  let replica: TestApp;
  let admin: Redis[];
  let payments: PaymentsService;
  let locks: LockService;

  /** The permit slot keys of `resource` on each node. */
  const slotKeys = async (resource: string) =>
    Promise.all(
      admin.map(async (node) =>
        (await node.keys(`${t.prefix}${resource}#permit-*`)).sort(),
      ),
    );

  beforeAll(async () => {
    t = await createApp(metadata);
    // A second app on the same nodes and prefix: another replica.
    replica = await createApp(metadata, { keyPrefix: t.prefix });
    admin = inspect(quorumUrls());
    payments = t.app.get(PaymentsService);
    locks = t.app.get(LockService);
  });
  afterAll(async () => {
    await replica.close();
    await t.close();
    await closeAll(admin);
  });

  it(`@Locked('psp:<merchantId>', { permits: ${PSP_PERMITS} }) never lets more than ${PSP_PERMITS} calls of two replicas and a core Redlock in, and lets in ${PSP_PERMITS}`, async () => {
    const other = replica.app.get(PaymentsService);
    const calls = [
      ...Array.from({ length: 24 }, () => payments.charge('m1', 40)),
      ...Array.from({ length: 24 }, () => other.charge('m1', 40)),
      // A third process, outside Nest: the same slots, the same bound.
      ...Array.from({ length: 8 }, () =>
        t.other.using(
          'psp:m1',
          () =>
            tracker.section('charge', ['psp:m1'], async () => {
              await sleep(40);
              return 'core';
            }),
          { permits: PSP_PERMITS, waitTimeout: 20_000, retryDelay: 10 },
        ),
      ),
    ];
    const slots = await Promise.all(calls);
    expect(tracker.count('charge')).toBe(56);
    expect(tracker.maxActive.get('psp:m1')).toBe(PSP_PERMITS);
    // Each call held one permit slot, named after the resource.
    const used = new Set(slots.filter((s) => s !== 'core'));
    for (const slot of used) expect(slot).toMatch(/^psp:m1#permit-[0-7]$/);
    expect(used.size).toBeGreaterThan(0);
    expect(used.size).toBeLessThanOrEqual(PSP_PERMITS);
    // The last releases may linger until the event loop turns (a caller
    // of the replica may ask again), then reach the nodes.
    const none = admin.map(() => []);
    expect(await settledTo(() => slotKeys('psp:m1'), none)).toEqual(none);
  });

  it(`locks.run('psp:m2', fn, { permits: 3 }) bounds its calls at 3 and uses all 3`, async () => {
    const run = () =>
      locks.run(
        'psp:m2',
        () =>
          tracker.section('run', ['psp:m2'], async () => {
            await sleep(30);
            return locks.current()!.resources[0];
          }),
        { permits: 3, waitTimeout: 20_000, retryDelay: 10 },
      );
    const slots = await Promise.all(Array.from({ length: 15 }, run));
    expect(tracker.maxActive.get('psp:m2')).toBe(3);
    expect(new Set(slots)).toEqual(
      new Set(['psp:m2#permit-0', 'psp:m2#permit-1', 'psp:m2#permit-2']),
    );
  });

  it('acquire() and tryAcquire() take one permit each; a full semaphore gives null, and busy after waitTimeout, naming the resource asked for', async () => {
    const held = await Promise.all(
      [0, 1, 2].map(() => locks.acquire('psp:m3', { permits: 3 })),
    );
    expect(held.flatMap((l) => l.resources).sort()).toEqual([
      'psp:m3#permit-0',
      'psp:m3#permit-1',
      'psp:m3#permit-2',
    ]);
    expect(await locks.tryAcquire('psp:m3', { permits: 3 })).toBeNull();
    // From another process too: the slots are held on the nodes.
    expect(await t.other.tryAcquire('psp:m3', { permits: 3 })).toBeNull();
    const error = await locks
      .acquire('psp:m3', { permits: 3, waitTimeout: 150 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error).toMatchObject({
      resources: ['psp:m3'],
      reason: 'busy',
      statusCode: 409,
    });
    expect((error as LockNotAcquiredError).retryAfter).toBeGreaterThan(0);
    await held[1].release();
    // Another process gets the slot freed (at once, or as the loop turns
    // when the release lingered for a caller of this one).
    const freed = await t.other.acquire('psp:m3', {
      permits: 3,
      waitTimeout: 5000,
      retryDelay: 10,
    });
    expect(freed.resources).toEqual(held[1].resources);
    await Promise.all([freed.release(), held[0].release(), held[2].release()]);
  });

  it("onNotAcquired: 'skip' skips the call while every permit is held elsewhere, and runs it once one is free", async () => {
    const elsewhere = await Promise.all(
      Array.from({ length: PSP_PERMITS }, () =>
        t.other.acquire('psp:s1', { permits: PSP_PERMITS }),
      ),
    );
    await expect(payments.chargeOrSkip('s1')).resolves.toBeUndefined();
    expect(tracker.count('chargeOrSkip')).toBe(0);
    await elsewhere[3].release();
    await expect(payments.chargeOrSkip('s1')).resolves.toBe('ran s1');
    await Promise.all(elsewhere.map((l) => l.release()));
  });

  it('a nested @Locked call with the same permits joins the outer permit: one slot held, released by the outer call', async () => {
    let inside: string[][] = [];
    const { outer, inner } = await payments.chargeAndRefund(
      'n1',
      async (id) => {
        inside = await slotKeys('psp:n1');
        return payments.refund(id);
      },
    );
    expect(inner).toBe(outer);
    expect(outer.resources).toEqual([expect.stringMatching(/^psp:n1#permit-/)]);
    for (const keys of inside)
      expect(keys).toEqual([`${t.prefix}${outer.resources[0]}`]);
    expect(outer.isReleased).toBe(true);
    const none = admin.map(() => []);
    expect(await settledTo(() => slotKeys('psp:n1'), none)).toEqual(none);
  });

  it('LockService.run() inside a @Locked call joins its permit too', async () => {
    const { outer, inner } = await payments.chargeAndRefund('n2', (id) =>
      locks.run(`psp:${id}`, (lock) => lock, { permits: PSP_PERMITS }),
    );
    expect(inner).toBe(outer);
  });

  it('a nested call with another permit count, or as a mutex, is refused with LockShapeError naming both shapes; the outer call releases', async () => {
    const fewer = await payments
      .chargeAndRefund('n3', (id) => payments.refundWithFourPermits(id))
      .catch((e: unknown) => e);
    expect(fewer).toBeInstanceOf(LockShapeError);
    expect(fewer).toMatchObject({
      resource: 'psp:n3',
      requested: '4 permits',
      current: `${PSP_PERMITS} permits`,
    });
    expect((fewer as Error).message).toBe(
      `Cannot lock "psp:n3" as a semaphore of 4 permits: it is held or acquired as a semaphore of ${PSP_PERMITS} permits in this process; use one shape (and one permits count) per resource`,
    );
    const mutex = await payments
      .chargeAndRefund('n3', (id) => payments.refundAsMutex(id))
      .catch((e: unknown) => e);
    expect(mutex).toBeInstanceOf(LockShapeError);
    expect(mutex).toMatchObject({
      requested: 'mutex',
      current: `${PSP_PERMITS} permits`,
    });
    const none = admin.map(() => []);
    expect(await settledTo(() => slotKeys('psp:n3'), none)).toEqual(none);
  });

  it('a call with another shape than one held in this process outside its chain is refused by the core with LockShapeError', async () => {
    const held = await locks.acquire('psp:x1', { permits: 2 });
    const error = await payments.refundAsMutex('x1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockShapeError);
    expect((error as Error).message).toMatch(
      /^Cannot lock "psp:x1" as a mutex: it is held or acquired as a semaphore of 2 permits in this process/,
    );
    await held.release();
    await expect(payments.refundAsMutex('x1')).resolves.toMatchObject({
      resources: ['psp:x1'],
    });
  });

  it('a bad permits value fails the start naming the method and the field', async () => {
    @Injectable()
    class Bad {
      @Locked('psp:<id>', { permits: 0 })
      async pay(id: string): Promise<string> {
        return id;
      }
    }
    const error = await createApp({ providers: [Bad] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as Error).message).toMatch(
      /Bad\.pay.*options\.permits.*must be an integer from 1 to 1024, got 0/,
    );
  });
});
