import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { TLSSocket } from 'node:tls';
import { Redis, type RedisOptions } from 'ioredis';
import {
  LockNotAcquiredError,
  Redlock,
  type RedlockOptions,
} from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  SLOW_RETRY,
  startListening,
  uniquePrefix,
} from '../utils/nodes.js';
import {
  makeCertificates,
  NoTlsBuildError,
  startTlsServer,
  type TlsRedisServer,
} from '../utils/tls.js';

// Nodes reached over TLS (`rediss://`, or RedisOptions with `tls`): three
// redis-servers that only speak TLS, with a certificate signed by a CA this
// spec makes, which no client trusts unless given it.
const certs = makeCertificates();
let servers: TlsRedisServer[] = [];
let noTls: string | undefined;
const started = await Promise.allSettled(
  [0, 1, 2].map(() => startTlsServer(certs)),
);
for (const result of started)
  if (result.status === 'fulfilled') servers.push(result.value);
const failed = started.find((r) => r.status === 'rejected');
if (failed) {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
  // The one reason to skip: this redis-server cannot serve TLS at all.
  if (!(failed.reason instanceof NoTlsBuildError)) {
    certs.remove();
    throw failed.reason;
  }
  noTls = failed.reason.message;
  console.warn(`Skipping the TLS spec: ${noTls}`);
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  certs.remove();
});

const quiet = { warn: () => undefined };
const withCa = (s: TlsRedisServer): RedisOptions => ({
  host: '127.0.0.1',
  port: s.port,
  tls: { ca: certs.ca },
});

(noTls ? describe.skip : describe)('nodes over TLS', () => {
  const redlocks: Redlock[] = [];
  const admin: Redis[] = [];
  // Instances of one test share its prefixes (they lock the same keys).
  let keyPrefix = uniquePrefix('tls');
  let metaPrefix = uniquePrefix('tls-meta');
  beforeEach(() => {
    keyPrefix = uniquePrefix('tls');
    metaPrefix = uniquePrefix('tls-meta');
  });
  const make = (clients: RedlockOptions['clients']) => {
    const redlock = new Redlock({
      clients,
      keyPrefix,
      metaPrefix,
      logger: quiet,
    });
    redlocks.push(redlock);
    return redlock;
  };

  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });

  it('takes and releases a lock on a quorum of nodes given as RedisOptions with tls.ca', async () => {
    admin.push(...servers.map((s) => new Redis(withCa(s))));
    const redlock = make(servers.map(withCa));
    expect(await redlock.ready(5000)).toBe(true);
    // Every connection is a TLS socket that verified the server's
    // certificate against the CA given.
    for (const node of redlock.nodes) {
      expect(node.client.stream).toBeInstanceOf(TLSSocket);
      expect((node.client.stream as TLSSocket).authorized).toBe(true);
      expect(node.name).toBe(`127.0.0.1:${node.client.options.port}`);
    }
    const lock = await redlock.acquire('over-tls', { ttl: 5000 });
    const key = redlock.keyOf('over-tls');
    // The acquire resolved at a quorum: let the third node's write land.
    await flushed(redlock);
    expect(await Promise.all(admin.map((c) => c.get(key)))).toEqual(
      servers.map(() => lock.value),
    );
    await lock.extend(6000);
    await flushed(redlock);
    for (const pttl of await Promise.all(admin.map((c) => c.pttl(key))))
      expect(pttl).toBeGreaterThan(5000);
    const result = await lock.release();
    expect(result.released).toBe(true);
    // It settles at a quorum: the third node may still be on its way.
    expect(
      result.nodes.filter((n) => n.outcome === 'granted').length,
    ).toBeGreaterThanOrEqual(2);
    await flushed(redlock);
    expect(await Promise.all(admin.map((c) => c.exists(key)))).toEqual([
      0, 0, 0,
    ]);
  });

  it('wakes a waiter with the release message over TLS (its subscriber connections are TLS too)', async () => {
    // Own ioredis instances from rediss:// URLs, with the CA: the
    // subscribers the library duplicates from them must keep the TLS options.
    const clients = () =>
      servers.map((s) => {
        const client = new Redis(s.url, { tls: { ca: certs.ca } });
        admin.push(client);
        return client;
      });
    const holder = make(clients());
    const waiter = make(clients());
    await startListening(holder, waiter);
    const wakeups = waiter.contention.listener.wakeups;
    const held = await holder.acquire('woken', { ttl: 10_000 });
    await flushed(holder);
    const started = performance.now();
    // Its fallback retry is 5 s away: only a release message brings it sooner.
    const waiting = waiter.acquire('woken', SLOW_RETRY);
    await new Promise((r) => setTimeout(r, 100));
    await held.release();
    const lock = await waiting;
    expect(performance.now() - started).toBeLessThan(2500);
    expect(lock.waitedInRedis).toBe(true);
    expect(waiter.contention.listener.wakeups).toBeGreaterThan(wakeups);
    await lock.release();
  });

  it('refuses a node whose certificate the client cannot verify, with the certificate error', async () => {
    // A rediss:// URL without the CA: the library makes a TLS client (a
    // plain one would not reach the certificate check), and Node trusts
    // only its public CAs.
    const redlock = make(servers.map((s) => s.url));
    for (const node of redlock.nodes)
      expect(node.client.options.tls).toBeTruthy();
    expect(await redlock.ready(1000)).toBe(false);
    const health = await redlock.health();
    expect(health.healthy).toBe(false);
    for (const node of health.nodes) {
      expect(node.up).toBe(false);
      expect(node.error).toMatch(/self-signed certificate/);
    }
    const refused = await redlock
      .acquire('untrusted', { waitTimeout: 0 })
      .catch((e: unknown) => e);
    // The lock error names the certificate failure of every node too.
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    expect(refused).toMatchObject({ reason: 'unreachable', statusCode: 503 });
    for (const vote of (refused as LockNotAcquiredError).nodes)
      expect(vote).toMatchObject({
        outcome: 'error',
        error: expect.stringMatching(/self-signed certificate/),
      });
    expect((refused as Error).message).toMatch(/self-signed certificate/);
  });
});
