import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import {
  Locked,
  LockService,
  Redlock,
  RedlockModule,
  type LockedOptions,
  type RedlockConfigError,
  type RedlockModuleOptions,
} from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { closeAll, inspect, quorumUrls } from '../utils/nodes.js';
import {
  fulfilled,
  leftovers,
  noUnhandledRejections,
  settle,
  typed,
} from './harness.js';

// The Nest entry points: @Locked options (checked at bootstrap), hostile
// values reaching @Locked keys at run time, and RedlockModule options.

/* eslint-disable @typescript-eslint/require-await */
function lockedWith(options: LockedOptions) {
  @Injectable()
  class HostileOptions {
    @Locked('h:<0>', options)
    async run(id: string): Promise<string> {
      return id;
    }
  }
  return HostileOptions;
}

@Injectable()
class HostileKeys {
  @Locked('order:<id>')
  async one(id: unknown): Promise<unknown> {
    return id;
  }

  @Locked('sku:<dto.items.*.sku>', { waitTimeout: 10_000 })
  async many(dto: { items: { sku: string }[] }): Promise<number> {
    // Every SKU held at once, each a resource of the one lock.
    const held = LockService.current()!.resources.length;
    return held === dto.items.length ? held : -1;
  }
}

/** Starts an app with `metadata` and closes it; resolves with the start's error. */
async function bootError(
  providers: unknown[],
  options: Partial<RedlockModuleOptions> = {},
): Promise<unknown> {
  const out = await settle(() =>
    createApp({ providers: providers as never[] }, options),
  );
  if (out.status === 'fulfilled') {
    await (out.value as TestApp).close();
    throw new Error('the application started');
  }
  return out.error;
}

describe('hostile Nest inputs', () => {
  noUnhandledRejections();

  describe('@Locked options: the application does not start, RedlockConfigError names the method and the option', () => {
    it.each([
      ['ttl', -1],
      ['ttl', NaN],
      ['ttl', Infinity],
      ['ttl', 1.5],
      ['waitTimeout', -1],
      ['waitTimeout', NaN],
      ['waitTimeout', Infinity],
      ['retryDelay', NaN],
      ['retryJitter', -1],
      ['nodeTimeout', Infinity],
      ['maxHold', NaN],
      ['maxHold', -1],
    ] as const)('%s = %s', async (option, value) => {
      const error = (await bootError([
        lockedWith({ [option]: value }),
      ])) as RedlockConfigError;
      typed({ status: 'rejected', error, ms: 0 }, 'RedlockConfigError');
      expect(error.field).toBe('@Locked on HostileOptions.run');
      expect(error.message).toContain(`options.${option}`);
    });

    it('fractional ttl, waitTimeout, retryDelay, nodeTimeout and maxHold start and lock', async () => {
      const Service = lockedWith({
        ttl: 2500.5,
        waitTimeout: 0.5,
        retryDelay: 0.5,
        nodeTimeout: 50.5,
        maxHold: 10_000.5,
      });
      const t = await createApp({ providers: [Service] });
      try {
        expect(await t.app.get(Service).run('frac')).toBe('frac');
      } finally {
        await t.close();
      }
    });
  });

  describe('hostile values reaching @Locked keys', () => {
    let t: TestApp;
    let svc: HostileKeys;
    let nodes: Redis[];
    beforeAll(async () => {
      t = await createApp({ providers: [HostileKeys] });
      svc = t.app.get(HostileKeys);
      nodes = inspect(quorumUrls());
    });
    afterAll(async () => {
      await t.close();
      await closeAll(nodes);
    });
    const noneLeft = async () => {
      expect(await leftovers([t.app.get(Redlock)], nodes, [t.prefix])).toEqual(
        [],
      );
    };

    it.each([
      ['a 1 MB id', 'i'.repeat(1 << 20)],
      ['CRLF and a RESP command', '1\r\n*1\r\n$8\r\nFLUSHALL\r\n'],
      ['glob characters and braces', '*?[x]{y}'],
      ['unicode', 'заказ🔒'],
    ])('%s: locks exactly order:<id>, leaves no key', async (_label, id) => {
      const running = svc.one(id);
      expect(fulfilled(await settle(() => running))).toBe(id);
      await noneLeft();
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['an object', { id: 1 }],
      ['an empty string', ''],
    ])(
      'an id that is %s: LockKeyError before any Redis call',
      async (_label, id) => {
        typed(await settle(() => svc.one(id)), 'LockKeyError');
      },
    );

    it('10,000 resources through <dto.items.*.sku>: all held at once, none left', async () => {
      const items = Array.from({ length: 10_000 }, (_, i) => ({
        sku: `s${i}`,
      }));
      expect(fulfilled(await settle(() => svc.many({ items }), 20_000))).toBe(
        10_000,
      );
      await noneLeft();
    });
  });

  it('a @Locked method and LockService called after app.close(): LockServiceUnavailableError (shutdown, 503); the method does not run', async () => {
    const t = await createApp({ providers: [HostileKeys] });
    const svc = t.app.get(HostileKeys);
    const service = t.app.get(LockService);
    await t.close();
    for (const call of [
      () => svc.one('after-close'),
      () => service.run('after-close', () => 'ran'),
    ]) {
      const error = typed(
        await settle(call),
        'LockServiceUnavailableError',
      ) as unknown as { reason: string; statusCode: number };
      expect([error.reason, error.statusCode]).toEqual(['shutdown', 503]);
    }
  });

  describe('RedlockModule options: the application does not start, RedlockConfigError names the field', () => {
    const start = async (module: unknown): Promise<unknown> => {
      let app: INestApplication | undefined;
      const out = await settle(async () => {
        const ref = await Test.createTestingModule({
          imports: [module as never],
        }).compile();
        app = ref.createNestApplication({ logger: false });
        await app.init();
      });
      await app?.close().catch(() => undefined);
      if (out.status === 'fulfilled')
        throw new Error('the application started');
      return out.error;
    };
    const quiet = { warn: () => undefined };

    it.each([
      ['clients: []', { clients: [] }, 'clients'],
      ['ttl: NaN', { ttl: NaN }, 'ttl'],
      ['ttl: 1.5', { ttl: 1.5 }, 'ttl'],
      ['waitTimeout: -1', { waitTimeout: -1 }, 'waitTimeout'],
      [
        'shutdownTimeout: Infinity',
        { shutdownTimeout: Infinity },
        'shutdownTimeout',
      ],
      ['keyPrefix: 5', { keyPrefix: 5 }, 'keyPrefix'],
      [
        'clients: [a URL with a space]',
        { clients: ['redis://a b:6379'] },
        'clients[0]',
      ],
    ])('forRoot({ %s })', async (_label, options, field) => {
      const error = await start(
        RedlockModule.forRoot({
          clients: quorumUrls(),
          logger: quiet,
          ...options,
        } as never),
      );
      expect(
        typed(
          { status: 'rejected', error, ms: 0 },
          'RedlockConfigError',
          field,
        ),
      ).toBeDefined();
    });

    it('forRootAsync with a factory resolving null: names options', async () => {
      const error = await start(
        RedlockModule.forRootAsync({ useFactory: () => null as never }),
      );
      typed(
        { status: 'rejected', error, ms: 0 },
        'RedlockConfigError',
        'options',
      );
    });

    it('forRoot({ name: "" }): names name', async () => {
      const error = await settle(() =>
        RedlockModule.forRoot({ name: '', clients: quorumUrls() }),
      );
      typed(error, 'RedlockConfigError', 'name');
    });
  });
});
