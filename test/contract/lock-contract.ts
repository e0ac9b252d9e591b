import {
  Controller,
  Injectable,
  Param,
  Post,
  type DynamicModule,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  compareFencingTokens,
  Locked,
  LockLostError,
  LockNotAcquiredError,
  LockService,
  LockServiceUnavailableError,
  RedlockConfigError,
  type Lock,
} from 'nestjs-redlock';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The contract of the lock as a Nest app sees it, run against the real
 * library on Redis nodes (redis.contract.spec.ts) and against the
 * in-memory one users get from `nestjs-redlock/testing`
 * (in-memory.contract.spec.ts), so that the two cannot drift apart.
 */
export interface ContractHarness {
  /** The module that registers the lock (default set), keys under `prefix`. */
  lockModule(prefix: string): DynamicModule;
  /** Lets `ms` pass on the lock's clock (real time, or a test clock). */
  advance(ms: number): Promise<void>;
  /** Makes `lock` lost, as a failed extension would (its keys gone). */
  lose(app: INestApplication, lock: Lock): Promise<void>;
}

/** Records when each locked call starts and ends. */
@Injectable()
class JobsService {
  readonly events: string[] = [];
  cronRuns = 0;

  constructor(readonly locks: LockService) {}

  @Locked('slow:<id>')
  async slow(id: string, tag: string): Promise<string> {
    this.events.push(`start ${tag}`);
    await sleep(30);
    this.events.push(`end ${tag}`);
    return `${id} ${tag}`;
  }

  @Locked('re:<id>')
  async outer(id: string): Promise<[Lock, Lock]> {
    const lock = this.locks.current()!;
    return [lock, await this.inner(id)];
  }

  @Locked('re:<id>', { waitTimeout: 100 })
  async inner(id: string): Promise<Lock> {
    await sleep(0);
    return this.locks.current()!.resources[0] === `re:${id}`
      ? this.locks.current()!
      : Promise.reject(new Error('wrong lock'));
  }

  @Locked('cron', { waitTimeout: 0, onNotAcquired: 'skip' })
  async cron(): Promise<string> {
    await sleep(0);
    this.cronRuns++;
    return 'ran';
  }

  @Locked('tick', { waitTimeout: 0, onNotAcquired: 'skip', minHold: 1500 })
  async tick(): Promise<string> {
    await sleep(0);
    this.cronRuns++;
    return 'ran';
  }
}

@Controller('orders')
class OrdersController {
  @Post(':id')
  @Locked('order:<id>', { waitTimeout: 0 })
  async place(@Param('id') id: string): Promise<{ id: string }> {
    await sleep(0);
    return { id };
  }
}

let count = 0;

export function describeLockContract(
  label: string,
  harness: ContractHarness,
): void {
  describe(`lock contract: ${label}`, () => {
    let app: INestApplication;
    let locks: LockService;
    let jobs: JobsService;

    beforeEach(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [harness.lockModule(`contract:${process.pid}:${++count}:`)],
        providers: [JobsService],
        controllers: [OrdersController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      locks = app.get(LockService);
      jobs = app.get(JobsService);
    });
    afterEach(() => app.close());

    it('a lease runs out after its ttl unless extended; then another caller gets it', async () => {
      const lock = await locks.acquire('lease', { ttl: 300 });
      expect(lock.isHeld).toBe(true);
      expect(await locks.tryAcquire('lease')).toBeNull();
      await harness.advance(400);
      expect(lock.isHeld).toBe(false);
      const next = await locks.tryAcquire('lease');
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('concurrent @Locked calls on one key run one at a time', async () => {
      await Promise.all([
        jobs.slow('a', '1'),
        jobs.slow('a', '2'),
        jobs.slow('a', '3'),
      ]);
      // Each start is followed by its own end: no two overlap.
      expect(jobs.events).toHaveLength(6);
      for (let i = 0; i < 6; i += 2)
        expect(jobs.events[i + 1]).toBe(jobs.events[i].replace('start', 'end'));
    });

    it('a multi-resource lock is all or nothing', async () => {
      const b = await locks.acquire('b');
      expect(await locks.tryAcquire(['a', 'b'])).toBeNull();
      // Nothing of the refused set stayed taken.
      const a = await locks.tryAcquire('a');
      expect(a).not.toBeNull();
      await Promise.all([a!.release(), b.release()]);
      const both = await locks.tryAcquire(['a', 'b']);
      expect(both?.resources).toEqual(['a', 'b']);
      await both!.release();
    });

    it('a nested @Locked call on the same key joins the held lock', async () => {
      const [outer, inner] = await jobs.outer('7');
      expect(inner).toBe(outer);
      expect(outer.isReleased).toBe(true);
    });

    it('a waiter gives up after waitTimeout with LockNotAcquiredError (busy); one that waits longer gets the lock at the release', async () => {
      const held = await locks.acquire('w', { ttl: 5000 });
      const late = locks
        .acquire('w', { waitTimeout: 100 })
        .catch((e: unknown) => e);
      await harness.advance(200);
      const error = await late;
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect((error as LockNotAcquiredError).reason).toBe('busy');
      const waiting = locks.acquire('w', { waitTimeout: 3000 });
      await sleep(20);
      await held.release();
      const lock = await waiting;
      expect(lock.isHeld).toBe(true);
      await lock.release();
    });

    it("onNotAcquired 'skip' resolves undefined without running the method while held", async () => {
      const held = await locks.acquire('cron');
      await expect(jobs.cron()).resolves.toBeUndefined();
      expect(jobs.cronRuns).toBe(0);
      await held.release();
      await expect(jobs.cron()).resolves.toBe('ran');
      expect(jobs.cronRuns).toBe(1);
    });

    it('minHold keeps the lock after a short call returned, then lets it go', async () => {
      // The call returns at once (the clock does not move), the lock stays.
      await expect(jobs.tick()).resolves.toBe('ran');
      await expect(jobs.tick()).resolves.toBeUndefined();
      expect(await locks.tryAcquire('tick')).toBeNull();
      expect(jobs.cronRuns).toBe(1);
      await harness.advance(1600);
      await expect(jobs.tick()).resolves.toBe('ran');
      expect(jobs.cronRuns).toBe(2);
      // Without minHold, the next call runs as soon as the first returned.
      await jobs.cron();
      await jobs.cron();
      expect(jobs.cronRuns).toBe(4);
    });

    it('answers 409 with Retry-After over HTTP while the lock is held', async () => {
      await app.listen(0, '127.0.0.1');
      const url = await app.getUrl();
      const held = await locks.acquire('order:1', { ttl: 3000 });
      const refused = await fetch(`${url}/orders/1`, { method: 'POST' });
      expect(refused.status).toBe(409);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(
        1,
      );
      expect(await refused.json()).toMatchObject({ resources: ['order:1'] });
      await held.release();
      const placed = await fetch(`${url}/orders/1`, { method: 'POST' });
      expect(placed.status).toBe(201);
    });

    it('fencing tokens rise with every grant of a resource', async () => {
      const tokens: string[] = [];
      for (let i = 0; i < 3; i++) {
        const lock = await locks.acquire('fenced', { fencing: true });
        tokens.push(lock.fencingToken!);
        await lock.release();
      }
      expect(compareFencingTokens(tokens[1], tokens[0])).toBeGreaterThan(0);
      expect(compareFencingTokens(tokens[2], tokens[1])).toBeGreaterThan(0);
      const plain = await locks.acquire('fenced');
      expect(plain.fencingToken).toBeUndefined();
      await plain.release();
    });

    it("a lost lock aborts its signal, and run() rejects with LockLostError carrying the work's result", async () => {
      let held: Lock | undefined;
      let sawAbort = false;
      const running = locks.run(
        'lost',
        async (lock) => {
          held = lock;
          while (!lock.signal.aborted) await sleep(5);
          sawAbort = true;
          return 'partial';
        },
        { ttl: 3000 },
      );
      while (!held) await sleep(5);
      await harness.lose(app, held);
      const error = await running.catch((e: unknown) => e);
      expect(sawAbort).toBe(true);
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).result).toBe('partial');
      // Its keys are gone: the resource can be taken again.
      const again = await locks.tryAcquire('lost');
      expect(again).not.toBeNull();
      await again!.release();
    });

    it('the watchdog keeps the lock of a run() past its ttl, and maxHold ends it', async () => {
      const kept = await locks.run(
        'wd',
        async (lock) => {
          await harness.advance(900);
          return lock.isHeld && !lock.signal.aborted;
        },
        { ttl: 300 },
      );
      expect(kept).toBe(true);
      const bounded = await locks
        .run('wd', () => harness.advance(700), { ttl: 300, maxHold: 400 })
        .catch((e: unknown) => e);
      expect(bounded).toBeInstanceOf(LockLostError);
      expect((bounded as Error).message).toMatch(/maxHold/);
    });

    it("an aborted signal makes a waiting acquire reject with the signal's reason", async () => {
      const held = await locks.acquire('abort');
      const controller = new AbortController();
      const waiting = locks.acquire('abort', {
        waitTimeout: 5000,
        signal: controller.signal,
      });
      await sleep(20);
      controller.abort(new Error('caller gave up'));
      await expect(waiting).rejects.toThrow('caller gave up');
      await held.release();
    });

    it('inspect() tells a lock of this instance, its lease and token, never its value', async () => {
      const lock = await locks.acquire('insp', { ttl: 3000, fencing: true });
      const seen = await locks.inspect('insp');
      expect(seen).toMatchObject({ held: true, holder: 'this-instance' });
      for (const node of seen.nodes) {
        expect(node).toMatchObject({ exists: true, holder: 'this-instance' });
        expect(node.ttlMs).toBeGreaterThan(2000);
        expect(node.fencingToken).toBe(lock.fencingToken);
      }
      expect(JSON.stringify(seen)).not.toContain(lock.value);
      await lock.release();
      expect((await locks.inspect('insp')).held).toBe(false);
    });

    it('current() is the lock of the enclosing run(), and undefined outside one', async () => {
      expect(locks.current()).toBeUndefined();
      const seen = await locks.run('cur', (lock) => locks.current() === lock);
      expect(seen).toBe(true);
    });

    it('validates options with the same errors, naming the field', async () => {
      const error = await locks
        .acquire('bad', { ttl: -1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect((error as RedlockConfigError).field).toBe('options.ttl');
      await expect(locks.acquire([])).rejects.toThrow(/resources/);
    });

    it('closing the app releases what it holds and refuses new locks', async () => {
      const lock = await locks.acquire('shut', { ttl: 5000 });
      await app.close();
      expect(lock.isHeld).toBe(false);
      const refused = await locks.acquire('shut').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LockServiceUnavailableError);
    });
  });
}
