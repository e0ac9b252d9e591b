import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockNotAcquiredError, Redlock } from 'nestjs-redlock';
import { RedisServer } from '../../scripts/redis-nodes.mjs';

/**
 * The Redis commands the library sends, itself or from its scripts (ACL
 * checks apply inside scripts too), and those ioredis sends on connecting.
 * docs/safety.md, "Production checklist", lists the same.
 */
const LOCK_COMMANDS = [
  'evalsha',
  'eval',
  'script|load',
  'ping',
  'info',
  'subscribe',
  'unsubscribe',
  'quit',
  'set',
  'get',
  'del',
  'exists',
  'pexpire',
  'pttl',
  'publish',
  'time',
  'zadd',
  'zcard',
  'zrange',
  'zrangebyscore',
  'zrem',
  'zremrangebyscore',
  'zscore',
];

// Own server: the test sets a password and an ACL user on it.
describe('connection settings reach the nodes unchanged', () => {
  let server: RedisServer;
  let admin: Redis;
  const quiet = { warn: () => undefined };

  beforeAll(async () => {
    server = await RedisServer.start();
    const setup = server.client();
    await setup.config('SET', 'requirepass', 's3cret');
    await setup.quit();
    admin = new Redis({
      port: server.port,
      host: '127.0.0.1',
      password: 's3cret',
    });
    await admin.call(
      'ACL',
      'SETUSER',
      'locker',
      'on',
      '>pw-locker',
      '~*',
      '+@all',
    );
  });
  afterAll(async () => {
    await admin.quit();
    await server.stop();
  });

  it('password and db index from a URL', async () => {
    const redlock = new Redlock({
      clients: [`redis://:s3cret@127.0.0.1:${server.port}/3`],
      logger: quiet,
    });
    const lock = await redlock.acquire('db-index');
    await admin.select(3);
    expect(await admin.get('lock:db-index')).toBe(lock.value);
    await admin.select(0);
    expect(await admin.exists('lock:db-index')).toBe(0);
    await lock.release();
    await redlock.quit();
  });

  it('an ACL user from RedisOptions', async () => {
    const redlock = new Redlock({
      clients: [
        {
          host: '127.0.0.1',
          port: server.port,
          username: 'locker',
          password: 'pw-locker',
        },
      ],
      logger: quiet,
    });
    const lock = await redlock.acquire('acl');
    expect(await admin.get('lock:acl')).toBe(lock.value);
    await lock.release();
    await redlock.quit();
  });

  it('works for an ACL user allowed only the commands the docs list, on its own keys and channels', async () => {
    // docs/safety.md, "Production checklist": keep the two lists in step.
    await admin.call(
      'ACL',
      'SETUSER',
      'locks-only',
      'on',
      '>pw-min',
      'resetkeys',
      '~lock:*',
      '~redlock:*',
      'resetchannels',
      '&redlock:*',
      '-@all',
      ...LOCK_COMMANDS.map((c) => `+${c}`),
    );
    const options = {
      host: '127.0.0.1',
      port: server.port,
      username: 'locks-only',
      password: 'pw-min',
    };
    const first = new Redlock({
      clients: [options],
      fencing: true,
      restartQuarantine: 1,
      logger: quiet,
    });
    const second = new Redlock({ clients: [options], logger: quiet });
    expect(await first.ready()).toBe(true);
    // The server may have started less than a second ago: uptime is read
    // in whole seconds, so its 1 ms quarantine may still run for 1 ms.
    for (let i = 0; i < 100 && !first.standing.counts(0); i++)
      await new Promise((r) => setTimeout(r, 10));
    expect((await first.health()).healthy).toBe(true);
    const held = await first.acquire(['acl-a', 'acl-b']);
    expect(held.fencingToken).toBeUndefined();
    expect(held.fencingTokens?.size).toBe(2);
    await held.extend();
    // A waiter of another instance, woken by the release message.
    const waiting = second.acquire('acl-a', { waitTimeout: 3000 });
    await new Promise((r) => setTimeout(r, 100));
    // Queued on the node, and listening for its release message (a denied
    // queue or channel command would leave it polling, and still succeed).
    expect(await admin.zcard('redlock:q:lock:acl-a')).toBe(1);
    expect(await admin.call('PUBSUB', 'CHANNELS', 'redlock:w:*')).toHaveLength(
      1,
    );
    expect((await held.release()).released).toBe(true);
    const next = await waiting;
    expect(next.isHeld).toBe(true);
    expect((await next.release()).released).toBe(true);
    await second.using('acl-using', () => undefined);
    // Denied outside what the user may touch: the list is not wider than it needs.
    const outside = new Redis(options);
    await expect(outside.get('other:key')).rejects.toThrow(/NOPERM/);
    await expect(outside.call('FLUSHALL')).rejects.toThrow(/NOPERM/);
    await outside.quit();
    await Promise.all([first.quit(), second.quit()]);
    await admin.call('ACL', 'DELUSER', 'locks-only');
  });

  it('a borrowed client with its own ioredis keyPrefix is refused before anything is written', async () => {
    // ioredis would prefix the lock keys and wait queues of such a client,
    // but not the release channels its waiters listen on.
    const prefixed = new Redis({
      port: server.port,
      host: '127.0.0.1',
      password: 's3cret',
      keyPrefix: 'app:',
    });
    try {
      let refused: unknown;
      try {
        new Redlock({ clients: [prefixed], logger: quiet });
      } catch (error) {
        refused = error;
      }
      expect(refused).toMatchObject({
        name: 'RedlockConfigError',
        field: 'clients[0]',
      });
      expect(await admin.keys('app:*')).toEqual([]);
    } finally {
      await prefixed.quit();
    }
  });

  it('tryAcquire after quit() is refused as closed, also with borrowed clients left open', async () => {
    const borrowed = new Redis({
      port: server.port,
      host: '127.0.0.1',
      password: 's3cret',
    });
    await borrowed.ping();
    const redlock = new Redlock({ clients: [borrowed], logger: quiet });
    await redlock.quit();
    // quit() leaves a borrowed client open: only the closed check stops it.
    expect(borrowed.status).toBe('ready');
    await expect(redlock.tryAcquire('after-quit')).rejects.toMatchObject({
      reason: 'closed',
    });
    expect(await admin.exists('lock:after-quit')).toBe(0);
    await borrowed.quit();
  });

  it('closeClients: quit() releases what is held, then closes the instances passed in', async () => {
    const given = new Redis({
      port: server.port,
      host: '127.0.0.1',
      password: 's3cret',
      lazyConnect: true,
    });
    const redlock = new Redlock({
      clients: [given],
      closeClients: true,
      logger: quiet,
    });
    // Owned, so connected by the library like the clients it creates.
    expect(await redlock.ready()).toBe(true);
    await redlock.acquire('handed-over');
    expect(await admin.exists('lock:handed-over')).toBe(1);
    await redlock.quit();
    expect(given.status).toBe('end');
    expect(await admin.exists('lock:handed-over')).toBe(0);
  });

  it('closeClients must be a boolean', () => {
    expect(
      () =>
        new Redlock({
          clients: [`redis://127.0.0.1:${server.port}`],
          closeClients: 'yes' as unknown as boolean,
        }),
    ).toThrow(/closeClients/);
  });

  it('lazyConnect: the clients it creates connect at ready() or at the first lock, not at construction', async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const named = (name: string) => [
      {
        host: '127.0.0.1',
        port: server.port,
        password: 's3cret',
        connectionName: name,
      },
    ];
    const connections = async (name: string) =>
      ((await admin.client('LIST')) as string)
        .split('\n')
        .filter((line) => line.includes(` name=${name} `)).length;

    const never = new Redlock({
      clients: named('lazy-never'),
      lazyConnect: true,
      logger: quiet,
    });
    const waiting = new Redlock({
      clients: named('lazy-ready'),
      lazyConnect: true,
      logger: quiet,
    });
    const first = new Redlock({
      clients: named('lazy-lock'),
      lazyConnect: true,
      logger: quiet,
    });
    const eager = new Redlock({ clients: named('eager'), logger: quiet });
    await sleep(100);
    expect(await connections('lazy-never')).toBe(0);
    expect(await connections('lazy-ready')).toBe(0);
    expect(await connections('lazy-lock')).toBe(0);
    expect(await connections('eager')).toBe(1);
    // Closing one that never connected opens nothing.
    await never.quit();
    expect(never.nodes[0].client.status).toBe('end');
    expect(await connections('lazy-never')).toBe(0);
    expect(await waiting.ready()).toBe(true);
    expect(await connections('lazy-ready')).toBe(1);
    // No ready(): the first lock connects on its way.
    const lock = await first.acquire('lazy');
    expect(await admin.get('lock:lazy')).toBe(lock.value);
    expect(await connections('lazy-lock')).toBe(1);
    await lock.release();
    await Promise.all([waiting.quit(), first.quit(), eager.quit()]);
  });

  it('names nodes by host:port, never with credentials, also when authentication fails', async () => {
    const redlock = new Redlock({
      clients: [`redis://locker:wrong-pw@127.0.0.1:${server.port}`],
      logger: quiet,
    });
    expect(redlock.nodes[0].name).toBe(`127.0.0.1:${server.port}`);
    const error = (await redlock
      .tryAcquire('denied')
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error.reason).toBe('unreachable');
    expect(error.message).toContain(`127.0.0.1:${server.port}`);
    expect(error.message).not.toContain('wrong-pw');
    await redlock.quit();
  });
});
