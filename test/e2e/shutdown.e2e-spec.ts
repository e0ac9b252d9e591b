import { Controller, Injectable, Param, Post, Query } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  LockLostError,
  LockNotAcquiredError,
  Locked,
  LockService,
  LockServiceUnavailableError,
  Redlock,
} from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { closeAll, inspect, quorumUrls } from '../utils/nodes.js';

/** A service whose locked work can be told how long to take. */
@Injectable()
class JobsService {
  constructor(readonly locks: LockService) {}
  /** The ids whose work has started (under its lock). */
  readonly started = new Set<string>();

  /** Runs `ms`, or until its lock's signal aborts (then throws its reason). */
  @Locked('job:<id>', { ttl: 10_000 })
  async work(id: string, ms: number): Promise<string> {
    this.started.add(id);
    await sleep(ms, undefined, { signal: this.locks.current()!.signal });
    return `done ${id}`;
  }
}

@Controller('jobs')
class JobsController {
  /** The ids whose request has started (under its lock). */
  static readonly started = new Set<string>();

  @Post(':id')
  @Locked('job:<id>')
  async run(@Param('id') id: string, @Query('ms') ms: string) {
    JobsController.started.add(id);
    await sleep(Number(ms));
    return { id };
  }
}

const admin = inspect(quorumUrls());
afterAll(() => closeAll(admin));

/** How many nodes hold `value` under `key`. */
async function holding(key: string, value: string): Promise<number> {
  const values = await Promise.all(admin.map((c) => c.get(key)));
  return values.filter((v) => v === value).length;
}

/**
 * The value of the lock the app's first @Locked call holds on `key`, once
 * its work has `started` (a key seen on a node is not yet a lock the call
 * holds: on a loaded machine its acquire may still wait for the others).
 */
async function heldValue(key: string, started: () => boolean): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const values = await Promise.all(admin.map((c) => c.get(key)));
    const value = values.find((v) => v !== null);
    if (value && started()) return value;
    await sleep(10);
  }
  throw new Error(`${key} was never locked`);
}

async function jobsApp(shutdownTimeout: number): Promise<TestApp> {
  return createApp({ providers: [JobsService] }, { shutdownTimeout });
}

describe('shutdown (app.close())', () => {
  it('gives work under a lock shutdownTimeout, then aborts it and releases its keys: a waiter of another process gets the lock at once', async () => {
    const t = await jobsApp(300);
    const jobs = t.app.get(JobsService);
    const running = jobs.work('1', 20_000).catch((e: unknown) => e);
    const key = `${t.prefix}job:1`;
    const value = await heldValue(key, () => jobs.started.has('1'));
    // Another process waits, woken only by a release (its retry is 8 s away).
    const waiting = t.other.acquire('job:1', {
      waitTimeout: 9000,
      retryDelay: 8000,
      retryJitter: 0,
    });
    await sleep(50);
    const started = Date.now();
    await t.app.close();
    const closedAfter = Date.now() - started;
    // Not left to its 10 s lease: gone from every node once close resolved.
    expect(await holding(key, value)).toBe(0);
    expect(closedAfter).toBeGreaterThanOrEqual(250);
    expect(closedAfter).toBeLessThan(3000);
    const next = await waiting;
    expect(Date.now() - started).toBeLessThan(3000);
    // The work was told: its signal aborted, and the call rejects with the loss.
    const outcome = await running;
    expect(outcome).toBeInstanceOf(LockLostError);
    expect((outcome as Error).message).toMatch(/shut down/);
    await next.release();
    await t.other.quit();
  });

  it('lets work that ends within shutdownTimeout finish with its own result, then releases', async () => {
    const t = await jobsApp(5000);
    const jobs = t.app.get(JobsService);
    const running = jobs.work('2', 200);
    const key = `${t.prefix}job:2`;
    const value = await heldValue(key, () => jobs.started.has('2'));
    const started = Date.now();
    await t.app.close();
    // close waited for the work, not for the whole grace.
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(running).resolves.toBe('done 2');
    expect(await holding(key, value)).toBe(0);
    await t.other.quit();
  });

  it('rejects waiting callers at once with a clear error, and refuses new ones with LockServiceUnavailableError', async () => {
    const t = await jobsApp(1000);
    const jobs = t.app.get(JobsService);
    const service = t.app.get(LockService);
    // Held by another process for longer than the test.
    const blocker = await t.other.acquire('job:3', { ttl: 20_000 });
    const waiting = jobs.work('3', 0).catch((e: unknown) => e);
    // Work in flight keeps close() pending while new calls come in.
    const inFlight = jobs.work('4', 500);
    await heldValue(`${t.prefix}job:4`, () => jobs.started.has('4'));
    const started = Date.now();
    const closing = t.app.close();
    const waited = await waiting;
    expect(Date.now() - started).toBeLessThan(1500);
    expect(waited).toBeInstanceOf(LockNotAcquiredError);
    expect((waited as LockNotAcquiredError).reason).toBe('closed');
    for (const refused of [
      await jobs.work('5', 0).catch((e: unknown) => e),
      await service.acquire('job:6').catch((e: unknown) => e),
      await service.run('job:7', () => 'ran').catch((e: unknown) => e),
    ]) {
      expect(refused).toBeInstanceOf(LockServiceUnavailableError);
      expect((refused as LockServiceUnavailableError).reason).toBe('shutdown');
      expect((refused as Error).message).toMatch(/shutting down/);
    }
    await closing;
    await expect(inFlight).resolves.toBe('done 4');
    await blocker.release();
    await t.other.quit();
  });

  it('closes twice without error, and quit() returns the same shutdown', async () => {
    const t = await jobsApp(1000);
    const redlock = t.app.get(Redlock);
    const lock = await t.app.get(LockService).acquire('job:8');
    const key = `${t.prefix}job:8`;
    await Promise.all([t.app.close(), t.app.close()]);
    await t.app.close();
    expect(redlock.quit()).toBe(redlock.quit());
    // A lock acquired by hand and never released is released all the same.
    expect(await holding(key, lock.value)).toBe(0);
    expect(lock.isHeld).toBe(false);
    await t.other.quit();
  });

  it('answers a request that comes in while the app drains with 503 and Retry-After, and lets the one in flight finish', async () => {
    const t = await createApp(
      { controllers: [JobsController] },
      { shutdownTimeout: 3000 },
    );
    await t.app.listen(0, '127.0.0.1');
    const url = await t.app.getUrl();
    const inFlight = fetch(`${url}/jobs/10?ms=600`, { method: 'POST' });
    await heldValue(`${t.prefix}job:10`, () =>
      JobsController.started.has('10'),
    );
    const closing = t.app.close();
    const refused = await fetch(`${url}/jobs/11?ms=0`, { method: 'POST' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({
      statusCode: 503,
      reason: 'shutdown',
    });
    const finished = await inFlight;
    expect(finished.status).toBe(201);
    expect(await finished.json()).toEqual({ id: '10' });
    await closing;
    await t.other.quit();
  });
});
