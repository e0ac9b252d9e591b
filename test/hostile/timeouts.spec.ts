import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  FencedStore,
  LockService,
  Redlock,
  type Lock,
  type RedlockOptions,
} from 'nestjs-redlock';
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
  typed,
} from './harness.js';

// Negative, NaN, infinite and fractional durations in every place that
// takes one. Each is refused with a RedlockConfigError naming the field,
// before any Redis call, or works as documented (fractions: see the
// "fractional" rows).

const BAD = [-1, NaN, Infinity] as const;
const quiet = { warn: () => undefined };

describe('hostile durations', () => {
  noUnhandledRejections();
  const keyPrefix = uniquePrefix('ht');
  const metaPrefix = uniquePrefix('htm');
  let redlock: Redlock;
  let service: LockService;
  let nodes: Redis[];

  beforeAll(() => {
    redlock = new Redlock({
      clients: quorumUrls(),
      keyPrefix,
      metaPrefix,
      ttl: 3000,
      logger: quiet,
    });
    service = new LockService(redlock);
    nodes = inspect(quorumUrls());
  });
  afterAll(async () => {
    await redlock.quit();
    await closeAll(nodes);
  });
  const noneLeft = async () => {
    expect(await leftovers([redlock], nodes, [keyPrefix, metaPrefix])).toEqual(
      [],
    );
  };

  describe('module options (new Redlock, RedlockModule.forRoot)', () => {
    const construct = (options: Partial<RedlockOptions>) => () =>
      new Redlock({
        clients: quorumUrls(),
        lazyConnect: true,
        logger: quiet,
        ...options,
      });
    const FIELDS = [
      'ttl',
      'waitTimeout',
      'retryDelay',
      'retryJitter',
      'nodeTimeout',
      'driftFactor',
      'restartQuarantine',
      'shutdownTimeout',
      'quorum',
      'localHandoff',
    ] as const;
    it.each(FIELDS.flatMap((f) => BAD.map((v) => [f, v] as const)))(
      '%s = %s: RedlockConfigError naming it',
      async (field, value) => {
        typed(
          await settle(construct({ [field]: value })),
          'RedlockConfigError',
          field,
        );
      },
    );
    it.each(
      (['interval', 'exclusion'] as const).flatMap((f) =>
        BAD.map((v) => [f, v] as const),
      ),
    )(
      'clockMonitor.%s = %s: RedlockConfigError naming it',
      async (field, value) => {
        typed(
          await settle(construct({ clockMonitor: { [field]: value } })),
          'RedlockConfigError',
          `clockMonitor.${field}`,
        );
      },
    );
    it.each([
      ['recreateOnExtend', 'yes'],
      ['clockMonitor', 1000],
    ] as const)(
      '%s = %j: RedlockConfigError naming it',
      async (field, value) => {
        typed(
          await settle(construct({ [field]: value })),
          'RedlockConfigError',
          field,
        );
      },
    );
    it.each([
      ['ttl', 1.5, 'ttl'],
      ['ttl', 2.02, 'ttl'],
      ['quorum', 3.5, 'quorum'],
      ['localHandoff', 0.5, 'localHandoff'],
    ] as const)(
      'fractional %s = %s: refused, naming %s (no lock could be valid / not a count)',
      async (field, value, named) => {
        typed(
          await settle(construct({ [field]: value })),
          'RedlockConfigError',
          named,
        );
      },
    );
    it.each([
      ['ttl', 2500.5],
      ['waitTimeout', 0.5],
      ['retryDelay', 0.5],
      ['retryJitter', 0.5],
      ['nodeTimeout', 0.5],
      ['driftFactor', 0.25],
      ['restartQuarantine', 0.5],
      ['shutdownTimeout', 0.5],
    ] as const)('fractional %s = %s: accepted', async (field, value) => {
      const made = fulfilled(await settle(construct({ [field]: value })));
      await (made as Redlock).quit();
    });
  });

  describe('acquire / tryAcquire / LockService options', () => {
    const FIELDS = [
      'ttl',
      'waitTimeout',
      'retryDelay',
      'retryJitter',
      'nodeTimeout',
    ] as const;
    const CALLS = [
      ['Redlock.acquire', (o: object) => redlock.acquire('d', o)],
      ['Redlock.tryAcquire', (o: object) => redlock.tryAcquire('d', o)],
      ['LockService.acquire', (o: object) => service.acquire('d', o)],
      ['LockService.run', (o: object) => service.run('d', () => 1, o)],
      ['Redlock.using', (o: object) => redlock.using('d', () => 1, o)],
    ] as const;
    it.each(
      CALLS.flatMap(([name, call]) =>
        FIELDS.flatMap((f) => BAD.map((v) => [name, f, v, call] as const)),
      ),
    )(
      '%s options.%s = %s: RedlockConfigError naming it',
      async (_n, field, value, call) => {
        typed(
          await settle(() => call({ [field]: value })),
          'RedlockConfigError',
          `options.${field}`,
        );
        await noneLeft();
      },
    );

    it.each(CALLS)(
      '%s options.ttl = 1.5 (below the drift allowance): refused at once, naming options.ttl (was: 5 s of failed attempts, reported as "unreachable")',
      async (_name, call) => {
        const out = await settle(() => call({ ttl: 1.5 }), 1000);
        typed(out, 'RedlockConfigError', 'options.ttl');
        expect(out.ms).toBeLessThan(100);
        await noneLeft();
      },
    );

    it('fractional ttl is rounded up on the nodes; fractional waitTimeout, retryDelay, retryJitter, nodeTimeout work', async () => {
      const lock = fulfilled(
        await settle(() =>
          redlock.acquire('frac', {
            ttl: 2500.2,
            waitTimeout: 0.5,
            retryDelay: 0.5,
            retryJitter: 0.5,
            nodeTimeout: 99.5,
          }),
        ),
      ) as Lock;
      await flushed(redlock);
      const pttl = await nodes[0].pttl(lock.keys[0]);
      expect(pttl).toBeGreaterThan(2000);
      expect(pttl).toBeLessThanOrEqual(2501);
      await lock.release();
      await noneLeft();
    });

    it.each(BAD)(
      'run options.maxHold = %s: RedlockConfigError naming it',
      async (value) => {
        typed(
          await settle(() => service.run('mh', () => 1, { maxHold: value })),
          'RedlockConfigError',
          'options.maxHold',
        );
      },
    );

    it('run options.maxHold = 0.5: the lock counts as lost at once, the call rejects with LockLostError carrying the result; no key left', async () => {
      const out = await settle(() =>
        service.run(
          'mh',
          async () => {
            await new Promise((r) => setTimeout(r, 50));
            return 'done';
          },
          { maxHold: 0.5 },
        ),
      );
      const error = typed<import('nestjs-redlock').LockLostError>(
        out,
        'LockLostError',
      );
      expect(error.result).toBe('done');
      await noneLeft();
    });
  });

  describe('Lock.extend(ttl), watch(), health(), inspect(), ready()', () => {
    it.each([...BAD, 0, 1.5])(
      'lock.extend(%s): RedlockConfigError naming ttl; the lock stays held (was: 1.5 lost the lock, NaN named options.ttl)',
      async (value) => {
        const lock = await redlock.acquire('ext');
        typed(
          await settle(() => lock.extend(value)),
          'RedlockConfigError',
          'ttl',
        );
        expect(lock.isHeld).toBe(true);
        expect(lock.signal.aborted).toBe(false);
        fulfilled(await settle(() => lock.extend(2500.5)));
        expect(lock.ttl).toBe(2500.5);
        await lock.release();
        await noneLeft();
      },
    );

    it.each(BAD)(
      'watch(lock, { maxHold: %s }): RedlockConfigError naming options.maxHold',
      async (value) => {
        const lock = await redlock.acquire('watch');
        typed(
          await settle(() => redlock.watch(lock, { maxHold: value })),
          'RedlockConfigError',
          'options.maxHold',
        );
        await lock.release();
        await noneLeft();
      },
    );

    it.each(BAD)(
      'health / inspect / ready (timeoutMs = %s): RedlockConfigError naming timeoutMs',
      async (value) => {
        for (const call of [
          () => redlock.health(value),
          () => service.health(value),
          () => redlock.inspect('x', value),
          () => service.inspect('x', value),
          () => redlock.ready(value),
        ])
          typed(await settle(call), 'RedlockConfigError', 'timeoutMs');
      },
    );

    it('fractional timeoutMs works: health(0.5), inspect(x, 0.5), ready(0.5) resolve', async () => {
      expect(fulfilled(await settle(() => redlock.health(0.5)))).toHaveProperty(
        'healthy',
      );
      expect(
        fulfilled(await settle(() => redlock.inspect('x', 0.5))),
      ).toHaveProperty('held');
      expect(typeof fulfilled(await settle(() => redlock.ready(0.5)))).toBe(
        'boolean',
      );
    });
  });

  describe('FencedStore numbers', () => {
    let client: Redis;
    let store: FencedStore;
    const prefix = uniquePrefix('htf');
    beforeAll(() => {
      client = inspect([singleUrl()])[0];
      store = new FencedStore(client, { prefix });
    });
    afterAll(() => closeAll([client]));
    const fence = { resource: 'n', token: '1' };

    it.each([NaN, Infinity, -Infinity, 0.5, 2 ** 53])(
      'incrby(delta = %s): RedlockConfigError naming delta, nothing written',
      async (delta) => {
        typed(
          await settle(() => store.incrby(fence, `${prefix}c`, delta)),
          'RedlockConfigError',
          'delta',
        );
        expect(await client.exists(`${prefix}c`, `${prefix}n`)).toBe(0);
      },
    );
    it.each([NaN, Infinity])(
      'set(value = %s): RedlockConfigError naming commands[0][2]',
      async (value) => {
        typed(
          await settle(() => store.set(fence, `${prefix}v`, value)),
          'RedlockConfigError',
          'commands[0][2]',
        );
        expect(await client.exists(`${prefix}v`, `${prefix}n`)).toBe(0);
      },
    );
    it('a command Redis refuses at run time: the ReplyError passes through; commands before it stay applied, as with MULTI (docs/fencing.md)', async () => {
      const out = await settle(() =>
        store.exec({ resource: 'cmd', token: '1' }, [
          ['SET', `${prefix}before`, 'x'],
          ['NOPE', `${prefix}after`],
        ]),
      );
      expect(out.status).toBe('rejected');
      expect((out as { error: Error }).error.name).toBe('ReplyError');
      expect(await client.get(`${prefix}before`)).toBe('x');
      expect(await store.highest('cmd')).toBe('1');
    });
    it.each([[[]], [[['SET']]], [[['', 'k']]], [[['SET', '']]]])(
      'commands %j: RedlockConfigError naming commands, nothing written',
      async (commands) => {
        const out = await settle(() =>
          store.exec({ resource: 'bad', token: '1' }, commands as never),
        );
        expect(
          typed(out, 'RedlockConfigError').message.startsWith(
            'Invalid commands',
          ),
        ).toBe(true);
        expect(await store.highest('bad')).toBeNull();
      },
    );
    it.each(['-1', '1.5', '1e3', ' 1', '01', '', 'NaN'])(
      'token %j: RedlockConfigError naming fence.token',
      async (token) => {
        typed(
          await settle(() =>
            store.set({ resource: 'n', token }, `${prefix}v`, 1),
          ),
          'RedlockConfigError',
          'fence.token',
        );
        expect(await client.exists(`${prefix}v`, `${prefix}n`)).toBe(0);
      },
    );
  });
});
