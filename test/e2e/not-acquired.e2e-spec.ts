import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type Lock,
  Locked,
  LockNotAcquiredError,
  Redlock,
  RedlockModule,
} from 'nestjs-redlock';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';
import { flushed, uniquePrefix } from '../utils/nodes.js';

@Injectable()
class Jobs {
  runs = 0;

  @Locked('report', { waitTimeout: 0, onNotAcquired: 'skip' })
  report(): Promise<string> {
    this.runs++;
    return Promise.resolve('ran');
  }

  @Locked('report', {
    waitTimeout: 0,
    onNotAcquired: 'skip',
    onUnavailable: 'warn',
  })
  reportOrWarn(): Promise<string> {
    this.runs++;
    return Promise.resolve('ran');
  }

  @Locked('tick', { waitTimeout: 0, onNotAcquired: 'skip', minHold: 3000 })
  tick(): Promise<string> {
    this.runs++;
    return Promise.resolve('ran');
  }
}

// What a failed acquire says, and what skip does with it: on servers of
// its own, as it stops them.
describe('when the lock is not acquired (own 5 servers)', () => {
  let servers: RedisServer[];
  const prefix = uniquePrefix('not-acquired');
  const quiet = { warn: () => undefined };

  beforeAll(async () => {
    servers = await startServers(5);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  const redlock = () =>
    new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: prefix,
      logger: quiet,
    });

  it('a node that had not answered when the others decided is pending, not timed out', async () => {
    const a = redlock();
    const b = redlock();
    const held = await a.acquire('pending', { ttl: 10_000 });
    servers[4].freeze();
    try {
      const error = (await b
        .acquire('pending', { waitTimeout: 0, nodeTimeout: 1000 })
        .catch((e: unknown) => e)) as LockNotAcquiredError;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      // Decided by the refusals of a quorum: the frozen node (and maybe
      // another that was a little slower) had not answered yet.
      const outcomes = error.nodes.map((n) => n.outcome);
      expect(outcomes[4]).toBe('pending');
      expect(
        outcomes.filter((o) => o === 'busy').length,
      ).toBeGreaterThanOrEqual(3);
      expect(outcomes).not.toContain('timeout');
      expect(error.message).toContain(`${servers[4].url.slice(8)} pending`);
    } finally {
      servers[4].thaw();
    }
    await held.release();
    await Promise.all([a.quit(), b.quit()]);
  });

  it('callers that split the nodes between them try once more, so that one gets the lock', async () => {
    const a = redlock();
    const clients = servers.map((s) => s.client());
    try {
      // Two contenders each hold a minority for 60 ms, as simultaneous
      // callers do until they take their grants back.
      const split = (round: number) =>
        Promise.all(
          [2, 3, 4].map((i) =>
            clients[i].set(`${prefix}split${round}`, `other-${i}`, 'PX', 60),
          ),
        );
      // Without the second attempt every round fails (a quorum refuses the
      // first). With it, a round may still fail on a starved machine when
      // our own grants answer after the refusals decided the attempt: up to
      // three rounds, one must get the lock.
      let lock: Lock | undefined;
      for (let round = 0; round < 3 && !lock; round++) {
        await split(round);
        lock = await a
          .acquire(`split${round}`, {
            waitTimeout: 0,
            retryDelay: 200,
            retryJitter: 0,
          })
          .catch(() => undefined);
      }
      expect(lock?.isHeld).toBe(true);
      await lock!.release();
      // A lock held on every node is not tried again: refused by all.
      const holder = redlock();
      await holder.ready();
      const held = await holder.acquire('held-all', { ttl: 5000 });
      await flushed(holder);
      expect(
        await Promise.all(clients.map((c) => c.get(`${prefix}held-all`))),
      ).toEqual(Array(5).fill(held.value));
      const started = performance.now();
      expect(
        await a.tryAcquire('held-all', { retryDelay: 2000, retryJitter: 0 }),
      ).toBeNull();
      // Not after a second attempt, which comes 1000 ms or more later.
      expect(performance.now() - started).toBeLessThan(1000);
      await held.release();
      await holder.quit();
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
      await a.quit();
    }
  });

  it('a conflict inside one process says so, and advises the same wait as one between processes', async () => {
    const a = redlock();
    const b = redlock();
    // The holder is still acquiring when the second call of its process
    // gives up: no lease known yet, the ttl it will get.
    const first = a.acquire('local', { ttl: 8000 });
    const local = (await a
      .acquire('local', { ttl: 8000, waitTimeout: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    const held = await first;
    const remote = (await b
      .acquire('local', { ttl: 8000, waitTimeout: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(local).toBeInstanceOf(LockNotAcquiredError);
    expect(local.reason).toBe('busy');
    expect(local.message).toBe(
      'Could not acquire lock on "local": held by another call in this process until the wait ended (no Redis node was asked)',
    );
    expect(remote.reason).toBe('busy');
    // Both about the holder's lease: 8 s, less what passed in between.
    for (const error of [local, remote]) {
      expect(error.retryAfter).toBeGreaterThan(4000);
      expect(error.retryAfter).toBeLessThanOrEqual(8000);
    }
    await held.release();
    await Promise.all([a.quit(), b.quit()]);
  });

  it('minHold leaves the keys to expire with the rest of it, also across a shutdown', async () => {
    const boot = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({
            clients: servers.map((s) => s.url),
            keyPrefix: prefix,
            logger: quiet,
          }),
        ],
        providers: [Jobs],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      return app;
    };
    const [a, b] = await Promise.all([boot(), boot()]);
    await expect(a.get(Jobs).tick()).resolves.toBe('ran');
    // The lease was cut after the hold began, before the call returned.
    const returned = performance.now();
    // A rolling restart: the replica that ran the tick closes at once.
    await a.close();
    const clients = servers.map((s) => s.client());
    const elapsed = performance.now() - returned;
    const ttls = await Promise.all(clients.map((c) => c.pttl(`${prefix}tick`)));
    // Still there on every node (nobody may take the tick again), and on
    // a quorum with what is left of minHold, not the 10 s lease, so the
    // next tick can have it. A node that missed the cut (its connection
    // reset on a starved machine) keeps the longer lease: later, never
    // sooner.
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(0);
    expect(
      ttls.filter((ttl) => ttl <= 3000 - elapsed + 5).length,
    ).toBeGreaterThanOrEqual(3);
    await expect(b.get(Jobs).tick()).resolves.toBeUndefined();
    await b.close();
    await Promise.all(clients.map((c) => c.quit()));
  });

  describe('skip with the nodes down', () => {
    let app: INestApplication;
    let jobs: Jobs;
    const warn = jest.fn();

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({
            clients: servers.slice(0, 3).map((s) => s.url),
            keyPrefix: prefix,
            logger: { warn },
          }),
        ],
        providers: [Jobs],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      jobs = app.get(Jobs);
      await jobs.report();
      expect(jobs.runs).toBe(1);
      for (const server of servers.slice(0, 3)) server.freeze();
    });
    afterAll(async () => {
      for (const server of servers.slice(0, 3)) server.thaw();
      await app.close();
    });

    it('rejects: an outage never looks like someone else running the job', async () => {
      const error = (await jobs.report().catch((e: unknown) => e)) as Error;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).reason).toBe('unreachable');
      expect(jobs.runs).toBe(1);
    });

    it("with onUnavailable: 'warn', skips and says why", async () => {
      warn.mockClear();
      await expect(jobs.reportOrWarn()).resolves.toBeUndefined();
      expect(jobs.runs).toBe(1);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toMatch(
        /^@Locked Jobs\.reportOrWarn was skipped: Could not acquire lock on "report" after 1 attempt: fewer than a quorum of Redis nodes answered/,
      );
    });
  });
});
