import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { Test } from '@nestjs/testing';
import {
  LockService,
  Redlock,
  RedlockConfigError,
  RedlockModule,
  type Lock,
} from 'nestjs-redlock';
import { checkLockedOptions } from '../../lib/utils/locked-options.js';
import { configError } from '../utils/config-error.js';

// Clients that never connect: option and argument validation must fail
// before any Redis call, so no server is needed here.
const lazy = (port: number) =>
  new Redis({ port, host: '127.0.0.1', lazyConnect: true });
const three = [lazy(1), lazy(2), lazy(3)];
const quiet = { warn: () => undefined };

describe('module options validation', () => {
  afterAll(() => three.forEach((c) => c.disconnect()));

  it.each([
    ['an empty client list', { clients: [] }, 'clients'],
    ['no client list', {}, 'clients'],
    ['a client that is not a client', { clients: [42] }, 'clients[0]'],
    ['a URL that is not redis://', { clients: ['http://x'] }, 'clients[0]'],
    ['ttl 0', { clients: three, ttl: 0 }, 'ttl'],
    ['ttl < 0', { clients: three, ttl: -5 }, 'ttl'],
    ['ttl NaN', { clients: three, ttl: NaN }, 'ttl'],
    ['ttl Infinity', { clients: three, ttl: Infinity }, 'ttl'],
    ['ttl not a number', { clients: three, ttl: '1000' }, 'ttl'],
    ['driftFactor < 0', { clients: three, driftFactor: -0.1 }, 'driftFactor'],
    ['driftFactor 0.5', { clients: three, driftFactor: 0.5 }, 'driftFactor'],
    ['quorum of N/2', { clients: [...three, lazy(4)], quorum: 2 }, 'quorum'],
    ['quorum too small', { clients: three, quorum: 1 }, 'quorum'],
    ['quorum larger than N', { clients: three, quorum: 4 }, 'quorum'],
    ['quorum not an integer', { clients: three, quorum: 2.5 }, 'quorum'],
    ['waitTimeout < 0', { clients: three, waitTimeout: -1 }, 'waitTimeout'],
    [
      'waitTimeout beyond a timer (2^31 ms)',
      { clients: three, waitTimeout: Number.MAX_SAFE_INTEGER },
      'waitTimeout',
    ],
    ['retryDelay NaN', { clients: three, retryDelay: NaN }, 'retryDelay'],
    ['retryJitter < 0', { clients: three, retryJitter: -1 }, 'retryJitter'],
    [
      'nodeTimeout >= ttl',
      { clients: three, ttl: 100, nodeTimeout: 100 },
      'nodeTimeout',
    ],
    ['keyPrefix not a string', { clients: three, keyPrefix: 5 }, 'keyPrefix'],
    [
      'restartQuarantine < 0',
      { clients: three, restartQuarantine: -1 },
      'restartQuarantine',
    ],
    [
      'restartQuarantine not a number',
      { clients: three, restartQuarantine: '10s' },
      'restartQuarantine',
    ],
    [
      'shutdownTimeout < 0',
      { clients: three, shutdownTimeout: -1 },
      'shutdownTimeout',
    ],
    [
      'shutdownTimeout not a number',
      { clients: three, shutdownTimeout: '5s' },
      'shutdownTimeout',
    ],
    [
      'lazyConnect not a boolean',
      { clients: three, lazyConnect: 'yes' },
      'lazyConnect',
    ],
    [
      'prefixes nested',
      { clients: three, keyPrefix: 'x:', metaPrefix: 'x:meta:' },
      'metaPrefix',
    ],
  ])('rejects %s, naming the field', (_label, options, field) => {
    const error = configError(
      () => new Redlock({ logger: quiet, ...options } as never),
    );
    expect(error.field).toBe(field);
    expect(error.name).toBe('RedlockConfigError');
    expect(error.message).toContain(field);
  });

  it('rejects the same node listed twice (same instance, or same host:port:db)', () => {
    expect(
      configError(
        () =>
          new Redlock({
            clients: [three[0], three[1], three[0]],
            logger: quiet,
          }),
      ).field,
    ).toBe('clients[2]');
    const error = configError(
      () =>
        new Redlock({
          clients: [
            'redis://127.0.0.1:7000',
            'redis://127.0.0.1:7001',
            'redis://127.0.0.1:7000/0',
          ],
          logger: quiet,
        }),
    );
    expect(error.field).toBe('clients[2]');
    expect(error.message).toContain('clients[0]');
  });

  it('rejects a client or client options with an ioredis keyPrefix, naming the field', () => {
    const prefixed = new Redis({
      port: 4,
      lazyConnect: true,
      keyPrefix: 'app:',
    });
    try {
      const error = configError(
        () =>
          new Redlock({
            clients: [three[0], prefixed, three[1]],
            logger: quiet,
          }),
      );
      expect(error.field).toBe('clients[1]');
      expect(error.message).toContain('"app:"');
      expect(
        configError(
          () =>
            new Redlock({
              clients: [{ port: 5, lazyConnect: true, keyPrefix: 'app:' }],
              logger: quiet,
            }),
        ).field,
      ).toBe('clients[0]');
    } finally {
      prefixed.disconnect();
    }
  });

  it('refuses a Redis Cluster client with an ioredis keyPrefix, naming the field', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], {
      lazyConnect: true,
      keyPrefix: 'app:',
    });
    try {
      const error = configError(
        () =>
          new Redlock({
            clients: [three[0], cluster, three[1]],
            logger: quiet,
          }),
      );
      expect(error.field).toBe('clients[1]');
      expect(error.message).toContain('keyPrefix "app:"');
    } finally {
      cluster.disconnect();
    }
  });

  it('checks a Cluster config: seeds listed, each a URL or { host, port }, credentials never shown', () => {
    expect(
      configError(() => new Redlock({ clients: [{ cluster: [] }] })).field,
    ).toBe('clients[0].cluster');
    const bad = configError(
      () =>
        new Redlock({
          clients: [
            { cluster: ['redis://127.0.0.1:1'] },
            { cluster: ['redis://127.0.0.1:2', 'http://u:s3cret@h:3'] },
          ],
        }),
    );
    expect(bad.field).toBe('clients[1].cluster[1]');
    expect(bad.message).not.toContain('s3cret');
  });

  it('puts hash tags in the keys with a Cluster node, and refuses prefixes with braces then', async () => {
    const cluster = new Redlock({
      clients: [{ cluster: ['redis://u:pw@127.0.0.1:1'] }],
      logger: quiet,
    });
    const plain = new Redlock({ clients: [three[2]], logger: quiet });
    try {
      expect(cluster.keyOf('order:42')).toBe('lock:{order:42}');
      expect(cluster.keyOf('{user:7}:cart')).toBe('lock:{user:7}{user:7}:cart');
      expect(plain.keyOf('order:42')).toBe('lock:order:42');
      expect(cluster.health).toBeDefined();
      expect(JSON.stringify(await cluster.health(50))).not.toContain('pw');
    } finally {
      await cluster.quit();
      await plain.quit();
    }
    const error = configError(
      () =>
        new Redlock({
          clients: [three[0]],
          hashTags: true,
          keyPrefix: '{app}:lock:',
        }),
    );
    expect(error.field).toBe('keyPrefix');
    expect(
      configError(
        () => new Redlock({ clients: [three[0]], hashTags: 'yes' as never }),
      ).field,
    ).toBe('hashTags');
  });

  it('never shows credentials in node names or errors', () => {
    const error = configError(
      () =>
        new Redlock({
          clients: [
            'redis://user:s3cret@127.0.0.1:7000',
            'redis://user:s3cret@127.0.0.1:7000',
          ],
          logger: quiet,
        }),
    );
    expect(error.message).not.toContain('s3cret');
    expect(
      configError(() => new Redlock({ clients: ['http://user:s3cret@x'] }))
        .message,
    ).not.toContain('s3cret');
  });

  it('accepts short leases and derives a node timeout below them', () => {
    const redlock = new Redlock({ clients: three, ttl: 150, logger: quiet });
    const timing = redlock.resolveTiming();
    expect(timing.ttl).toBe(150);
    expect(timing.nodeTimeout).toBeLessThan(150);
    expect(redlock.quorum).toBe(2);
  });

  it('warns about an even number of nodes', () => {
    const warn = jest.fn();
    new Redlock({ clients: [three[0], three[1]], logger: { warn } });
    expect(warn).toHaveBeenCalledWith(
      expect.stringContaining('even number of nodes (2)'),
    );
  });
});

describe('per-call argument validation (before any Redis call)', () => {
  const redlock = new Redlock({ clients: three, logger: quiet });

  it.each([
    ['an empty string', '', 'resources'],
    ['an empty list', [], 'resources'],
    ['a non-string', 42, 'resources'],
    ['a list with an empty string', ['a', ''], 'resources[1]'],
    ['a list with a non-string', ['a', null], 'resources[1]'],
  ])('acquire rejects %s as resources', async (_label, resources, field) => {
    const error = await redlock
      .acquire(resources as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect((error as RedlockConfigError).field).toBe(field);
  });

  it.each([
    [{ ttl: 0 }, 'options.ttl'],
    [{ ttl: NaN }, 'options.ttl'],
    [{ waitTimeout: -1 }, 'options.waitTimeout'],
    [{ waitTimeout: 2 ** 31 }, 'options.waitTimeout'],
    [{ nodeTimeout: 20_000 }, 'options.nodeTimeout'],
  ])('tryAcquire rejects bad options %j, naming %s', async (options, field) => {
    const error = await redlock
      .tryAcquire('r', options)
      .catch((e: unknown) => e);
    expect((error as RedlockConfigError).field).toBe(field);
  });

  it.each([
    [{ maxHold: 0 }, 'options.maxHold'],
    [{ maxHold: 2 ** 31 }, 'options.maxHold'],
    [{ maxHold: '5s' }, 'options.maxHold'],
    [{ onLockLost: 'thro' }, 'options.onLockLost'],
  ])(
    'using rejects bad watchdog options %j before acquiring, naming %s',
    async (options, field) => {
      let ran = false;
      // An acquire would fail as unreachable (no server): the options fail first.
      const error = await redlock
        .using('r', () => (ran = true), options as never)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).field).toBe(field);
      expect(ran).toBe(false);
    },
  );

  it('LockService.run rejects bad watchdog options before acquiring', async () => {
    const error = await new LockService(redlock)
      .run('r', () => undefined, { onLockLost: 'never' } as never)
      .catch((e: unknown) => e);
    expect((error as RedlockConfigError).field).toBe('options.onLockLost');
  });

  it('watch rejects a maxHold that is not a duration and an onLost that is not a function', () => {
    const lock = {} as Lock;
    expect(configError(() => redlock.watch(lock, { maxHold: -1 })).field).toBe(
      'options.maxHold',
    );
    expect(
      configError(() => redlock.watch(lock, { onLost: 'log' } as never)).field,
    ).toBe('options.onLost');
  });

  it('names options.ttl when a call shortens the lease below the module nodeTimeout', () => {
    const withTimeout = new Redlock({
      clients: three,
      nodeTimeout: 50,
      logger: quiet,
    });
    expect(
      configError(() => withTimeout.resolveTiming({ ttl: 40 })).field,
    ).toBe('options.ttl');
  });
});

describe('@Locked options (checked at bootstrap)', () => {
  it('rejects durations beyond a timer, naming the field', () => {
    expect(checkLockedOptions({ waitTimeout: 2 ** 31, ttl: 1000 })).toEqual([
      expect.stringMatching(
        /^options\.waitTimeout must be at most 2147483647 ms/,
      ),
    ]);
    expect(checkLockedOptions({ maxHold: 2 ** 31 - 1 })).toEqual([]);
  });
});

describe('unknown option names are refused with the nearest name', () => {
  const redlock = new Redlock({ clients: three, logger: quiet });
  afterAll(() => redlock.quit());

  it.each([
    [{ clients: three, tll: 5 }, 'tll', 'ttl'],
    [{ clients: three, waitTimout: 5 }, 'waitTimout', 'waitTimeout'],
    [{ clients: three, KeyPrefix: 'x:' }, 'KeyPrefix', 'keyPrefix'],
    [{ clients: three, waitTimeout: 5, nodes: [] }, 'nodes', undefined],
    [
      { clients: three, clockMonitor: { intervall: 5 } },
      'clockMonitor.intervall',
      'interval',
    ],
  ])('new Redlock(%j) names %s', (options, field, near) => {
    const error = configError(() => new Redlock(options as never));
    expect(error.field).toBe(field);
    const name = field.split('.').at(-1)!;
    expect(error.message).toMatch(
      near
        ? `'${name}' is not an option; did you mean '${near}'?`
        : `'${name}' is not an option (known: `,
    );
  });

  it.each([
    [
      'acquire',
      { waitTimout: 5, ttl: 1000 },
      'options.waitTimout',
      'waitTimeout',
    ],
    ['tryAcquire', { fenceing: true }, 'options.fenceing', 'fencing'],
    ['using', { maxhold: 5 }, 'options.maxhold', 'maxHold'],
    ['using', { minHld: 5 }, 'options.minHld', 'minHold'],
  ] as const)(
    '%s(%j) rejects before any Redis call, naming %s',
    async (method, options, field, near) => {
      const call =
        method === 'using'
          ? redlock.using('r', () => 1, options as never)
          : redlock[method]('r', options as never);
      const error = (await call.catch((e: unknown) => e)) as RedlockConfigError;
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect(error.field).toBe(field);
      expect(error.message).toContain(`did you mean '${near}'?`);
    },
  );

  it('watch() and LockService.run() too', async () => {
    const lock = { resources: ['r'] } as unknown as Lock;
    expect(
      configError(() => redlock.watch(lock, { maxHld: 5 } as never)).field,
    ).toBe('options.maxHld');
    const error = (await new LockService(redlock)
      .run('r', () => 1, { retryDelya: 5 } as never)
      .catch((e: unknown) => e)) as RedlockConfigError;
    expect(error.field).toBe('options.retryDelya');
    expect(error.message).toContain(`did you mean 'retryDelay'?`);
  });

  it('RedlockModule.forRoot, with retryAfter among the suggestions', async () => {
    const error = (await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ clients: three, retryAftr: 1000 } as never),
      ],
    })
      .compile()
      .catch((e: unknown) => e)) as RedlockConfigError;
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.field).toBe('retryAftr');
    expect(error.message).toContain(`did you mean 'retryAfter'?`);
  });

  it('@Locked options, with the Nest-only names among the suggestions', () => {
    expect(checkLockedOptions({ onNotAquired: 'skip' })).toEqual([
      expect.stringMatching(
        /^options\.onNotAquired: 'onNotAquired' is not an option; did you mean 'onNotAcquired'\?/,
      ),
    ]);
    expect(checkLockedOptions({ signal: undefined })[0]).toMatch(
      /'signal' is not an option/,
    );
    expect(checkLockedOptions({ minHold: 500, onUnavailable: 'warn' })).toEqual(
      [],
    );
  });
});
