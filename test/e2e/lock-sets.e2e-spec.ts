import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InjectLockService,
  InjectRedlock,
  Locked,
  LockService,
  Redlock,
  RedlockConfigError,
  RedlockModule,
} from 'nestjs-redlock';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  closeAll,
  inspect,
  quorumUrls,
  singleUrl,
  uniquePrefix,
} from '../utils/nodes.js';

const quiet = { warn: () => undefined };

/** Locks on both sets: orders on the default quorum, payments on their own node. */
@Injectable()
class CheckoutService {
  readonly seen: string[] = [];

  constructor(
    @InjectLockService('payments') readonly payments: LockService,
    readonly orders: LockService,
  ) {}

  @Locked('order:<id>')
  async order(id: string): Promise<string[]> {
    await sleep(0);
    this.seen.push(`order ${id}`);
    return this.orders.current()!.keys.slice();
  }

  @Locked('pay:<id>', { lockSet: 'payments' })
  async pay(id: string, ms = 0): Promise<string[]> {
    const lock = this.payments.current()!;
    this.seen.push(`start ${id}`);
    await sleep(ms);
    this.seen.push(`end ${id}`);
    return lock.keys.slice();
  }
}

/** Built by a factory: property injection cannot reach it, the payments explorer must. */
class RefundService {
  @Locked('refund:<id>', { lockSet: 'payments' })
  async refund(id: string): Promise<boolean> {
    await sleep(0);
    return id.length > 0;
  }
}

function setsModule(prefix: string, extra: object[] = []) {
  @Module({
    imports: [
      RedlockModule.forRoot({
        clients: quorumUrls(),
        keyPrefix: prefix,
        logger: quiet,
      }),
      RedlockModule.forRootAsync({
        name: 'payments',
        useFactory: () => ({
          clients: [singleUrl()],
          keyPrefix: prefix,
          logger: quiet,
        }),
      }),
    ],
    providers: [
      CheckoutService,
      { provide: RefundService, useFactory: () => new RefundService() },
      ...(extra as never[]),
    ],
  })
  class SetsModule {}
  return SetsModule;
}

describe('named lock sets', () => {
  const quorum = inspect(quorumUrls());
  const [single] = inspect([singleUrl()]);
  afterAll(() => closeAll([...quorum, single]));

  it('locks each @Locked method on the nodes of its own set, and injects each set by name', async () => {
    const prefix = uniquePrefix('sets');
    const app = await Test.createTestingModule({
      imports: [setsModule(prefix)],
    }).compile();
    await app.init();
    try {
      const checkout = app.get(CheckoutService);
      // Each set's service runs on its own nodes.
      expect(checkout.payments).not.toBe(checkout.orders);
      expect(checkout.payments.redlock.nodes.map((n) => n.name)).toEqual([
        new URL(singleUrl()).host,
      ]);
      expect(checkout.orders.redlock.nodes).toHaveLength(5);
      expect(app.get(LockService)).toBe(checkout.orders);
      expect(app.get(Redlock)).toBe(checkout.orders.redlock);

      // While a payment holds its lock, the key is on the payments node only.
      const paying = checkout.pay('7', 300);
      await sleep(100);
      expect(await single.exists(`${prefix}pay:7`)).toBe(1);
      const onQuorum = await Promise.all(
        quorum.map((c) => c.exists(`${prefix}pay:7`)),
      );
      expect(onQuorum).toEqual([0, 0, 0, 0, 0]);
      // Mutual exclusion within the set: a second payment waits for the first.
      await Promise.all([paying, checkout.pay('7', 0)]);
      expect(checkout.seen).toEqual(['start 7', 'end 7', 'start 7', 'end 7']);

      // Orders lock on the default set's quorum, never on the payments node.
      expect(await checkout.order('9')).toEqual([`${prefix}order:9`]);
      expect(await single.keys(`${prefix}order:*`)).toEqual([]);

      // A provider built by a factory gets the payments set all the same.
      await expect(app.get(RefundService).refund('3')).resolves.toBe(true);
    } finally {
      await app.close();
    }
  });

  it('injects a named set Redlock with @InjectRedlock, and closes every set with the app', async () => {
    @Injectable()
    class Holder {
      constructor(@InjectRedlock('payments') readonly redlock: Redlock) {}
    }
    const app = await Test.createTestingModule({
      imports: [setsModule(uniquePrefix('sets'), [Holder])],
    }).compile();
    await app.init();
    const payments = app.get(Holder).redlock;
    const orders = app.get(Redlock);
    expect(payments).not.toBe(orders);
    expect(payments.quorum).toBe(1);
    await app.close();
    expect(payments.isClosed).toBe(true);
    expect(orders.isClosed).toBe(true);
  });

  it('fails start naming a lock set that no import registers', async () => {
    @Injectable()
    class Misnamed {
      @Locked('x:<id>', { lockSet: 'ledger' })
      async run(id: string): Promise<string> {
        await sleep(0);
        return id;
      }
    }
    const app = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ clients: quorumUrls(), logger: quiet }),
      ],
      providers: [Misnamed],
    }).compile();
    const error = await app.init().catch((e: unknown) => e);
    await app.close();
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as Error).message).toMatch(
      /Misnamed\.run.*lock set "ledger" is not registered.*name: "ledger"/,
    );
  });

  it('rejects an empty set name, naming the field', () => {
    expect(() =>
      RedlockModule.forRoot({ name: '', clients: quorumUrls() }),
    ).toThrow(/Invalid name: must be a non-empty string/);
  });
});
