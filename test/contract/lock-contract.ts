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
  LockShapeError,
  LockUpgradeError,
  RedlockConfigError,
  type AcquireOptions,
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

/** Semaphores (`permits`) and read/write locks (`mode`) through `@Locked`. */
@Injectable()
class ShapesService {
  inside = 0;
  mostInside = 0;
  readers = 0;
  mostReaders = 0;
  writers = 0;
  readonly conflicts: string[] = [];
  skippedRuns = 0;

  constructor(readonly locks: LockService) {}

  @Locked('sem:<id>', { permits: 3, waitTimeout: 10_000 })
  async permit(id: string): Promise<string> {
    this.inside++;
    this.mostInside = Math.max(this.mostInside, this.inside);
    await sleep(20);
    this.inside--;
    void id;
    return this.locks.current()!.resources[0];
  }

  @Locked('sem-cron', { permits: 2, waitTimeout: 0, onNotAcquired: 'skip' })
  async semCron(): Promise<string> {
    await sleep(0);
    this.skippedRuns++;
    return 'ran';
  }

  @Locked('psp:<id>', { permits: 2 })
  async outerPermit(
    id: string,
    inner: (id: string) => Promise<Lock>,
  ): Promise<[Lock, Lock]> {
    return [this.locks.current()!, await inner(id)];
  }

  @Locked('psp:<id>', { permits: 2, waitTimeout: 100 })
  async innerPermit(id: string): Promise<Lock> {
    await sleep(0);
    void id;
    return this.locks.current()!;
  }

  @Locked('psp:<id>', { permits: 3, waitTimeout: 100 })
  async innerThreePermits(id: string): Promise<Lock> {
    await sleep(0);
    void id;
    return this.locks.current()!;
  }

  @Locked('cat:<id>', { mode: 'read', waitTimeout: 10_000 })
  async read(id: string): Promise<void> {
    this.readers++;
    this.mostReaders = Math.max(this.mostReaders, this.readers);
    if (this.writers > 0)
      this.conflicts.push(`a reader of ${id} with a writer`);
    await sleep(20);
    this.readers--;
  }

  @Locked('cat:<id>', { mode: 'write', waitTimeout: 10_000 })
  async reprice(id: string): Promise<void> {
    this.writers++;
    if (this.writers > 1 || this.readers > 0)
      this.conflicts.push(
        `a writer of ${id} with ${this.writers - 1} writers and ${this.readers} readers`,
      );
    await sleep(20);
    this.writers--;
  }

  @Locked('cat:<id>', { mode: 'write' })
  async outerWrite(
    id: string,
    inner: (id: string) => Promise<Lock>,
  ): Promise<[Lock, Lock]> {
    return [this.locks.current()!, await inner(id)];
  }

  @Locked('cat:<id>', { mode: 'read' })
  async outerRead(
    id: string,
    inner: (id: string) => Promise<Lock>,
  ): Promise<[Lock, Lock]> {
    return [this.locks.current()!, await inner(id)];
  }

  @Locked('cat:<id>', { mode: 'read', waitTimeout: 100 })
  async innerRead(id: string): Promise<Lock> {
    await sleep(0);
    void id;
    return this.locks.current()!;
  }

  @Locked('cat:<id>', { mode: 'write', waitTimeout: 100 })
  async innerWrite(id: string): Promise<Lock> {
    await sleep(0);
    void id;
    return this.locks.current()!;
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

  @Post('psp/:id')
  @Locked('psp:<id>', { permits: 2, waitTimeout: 0 })
  async charge(@Param('id') id: string): Promise<{ id: string }> {
    await sleep(0);
    return { id };
  }

  @Post('cat/:id')
  @Locked('cat:<id>', { mode: 'write', waitTimeout: 0 })
  async reprice(@Param('id') id: string): Promise<{ id: string }> {
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
    let shapes: ShapesService;

    beforeEach(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [harness.lockModule(`contract:${process.pid}:${++count}:`)],
        providers: [JobsService, ShapesService],
        controllers: [OrdersController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      locks = app.get(LockService);
      jobs = app.get(JobsService);
      shapes = app.get(ShapesService);
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

    it('inspect() tells the permits held of a semaphore, and the side of a read/write lock', async () => {
      const permits = await Promise.all([
        locks.acquire('insp-sem', { permits: 3 }),
        locks.acquire('insp-sem', { permits: 3 }),
      ]);
      const sem = await locks.inspect('insp-sem', { permits: 3 });
      expect(sem).toMatchObject({ permits: 3, held: 2, heldHere: 2, inUse: 3 });
      expect(sem.slots.filter((slot) => slot.held)).toHaveLength(2);
      await Promise.all(permits.map((lock) => lock.release()));
      expect((await locks.inspect('insp-sem', { permits: 3 })).held).toBe(0);
      const readers = await Promise.all([
        locks.acquire('insp-rw', { mode: 'read' }),
        locks.acquire('insp-rw', { mode: 'read' }),
      ]);
      const read = await locks.inspect('insp-rw', { mode: 'read' });
      expect(read).toMatchObject({ held: true, mode: 'read', readers: 2 });
      expect(read.writer).toBeUndefined();
      await Promise.all(readers.map((lock) => lock.release()));
      const writer = await locks.acquire('insp-rw', { mode: 'write' });
      expect(await locks.inspect('insp-rw', { mode: 'write' })).toMatchObject({
        held: true,
        mode: 'write',
        writer: 'this-instance',
        readers: 0,
      });
      await writer.release();
      expect((await locks.inspect('insp-rw', { mode: 'read' })).held).toBe(
        false,
      );
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

    describe('semaphores (permits)', () => {
      it('lets at most `permits` @Locked calls in at once, and that many', async () => {
        const slots = await Promise.all(
          Array.from({ length: 9 }, () => shapes.permit('a')),
        );
        expect(shapes.mostInside).toBe(3);
        expect(new Set(slots)).toEqual(
          new Set(['sem:a#permit-0', 'sem:a#permit-1', 'sem:a#permit-2']),
        );
      });

      it('hands out permit slots; a full semaphore gives tryAcquire null and acquire LockNotAcquiredError (busy, the resource asked for) after waitTimeout', async () => {
        const held = [
          await locks.acquire('p', { permits: 2, ttl: 5000 }),
          await locks.acquire('p', { permits: 2, ttl: 5000 }),
        ];
        expect(held.flatMap((l) => l.resources).sort()).toEqual([
          'p#permit-0',
          'p#permit-1',
        ]);
        expect(await locks.tryAcquire('p', { permits: 2 })).toBeNull();
        const late = locks
          .acquire('p', { permits: 2, waitTimeout: 100 })
          .catch((e: unknown) => e);
        await harness.advance(200);
        const error = await late;
        expect(error).toBeInstanceOf(LockNotAcquiredError);
        expect(error).toMatchObject({ reason: 'busy', resources: ['p'] });
        expect((error as LockNotAcquiredError).retryAfter).toBeGreaterThan(0);
        // A waiter gets the permit released.
        const waiting = locks.acquire('p', { permits: 2, waitTimeout: 3000 });
        await sleep(20);
        await held[1].release();
        const next = await waiting;
        expect(next.resources).toEqual(held[1].resources);
        await Promise.all([next.release(), held[0].release()]);
      });

      it('takes one permit of each resource, all or nothing', async () => {
        const a = await locks.acquire('pa', { permits: 1 });
        expect(await locks.tryAcquire(['pa', 'pb'], { permits: 1 })).toBeNull();
        // Nothing of pb was taken by the refused call.
        const b = await locks.tryAcquire('pb', { permits: 1 });
        expect(b?.resources).toEqual(['pb#permit-0']);
        await Promise.all([a.release(), b!.release()]);
        const both = await locks.acquire(['pa', 'pb'], { permits: 1 });
        expect(both.resources).toEqual(['pa#permit-0', 'pb#permit-0']);
        await both.release();
      });

      it('fencing tokens of a semaphore rise over every permit holder of the resource, whatever the slot', async () => {
        const first = await locks.acquire('fp', { permits: 2, fencing: true });
        const second = await locks.acquire('fp', { permits: 2, fencing: true });
        expect(second.resources).not.toEqual(first.resources);
        expect(
          compareFencingTokens(second.fencingToken!, first.fencingToken!),
        ).toBeGreaterThan(0);
        await first.release();
        const third = await locks.acquire('fp', { permits: 2, fencing: true });
        expect(third.resources).toEqual(first.resources);
        expect(
          compareFencingTokens(third.fencingToken!, second.fencingToken!),
        ).toBeGreaterThan(0);
        await Promise.all([second.release(), third.release()]);
      });

      it("onNotAcquired 'skip' skips while every permit is held", async () => {
        const held = [
          await locks.acquire('sem-cron', { permits: 2 }),
          await locks.acquire('sem-cron', { permits: 2 }),
        ];
        await expect(shapes.semCron()).resolves.toBeUndefined();
        expect(shapes.skippedRuns).toBe(0);
        await held[0].release();
        await expect(shapes.semCron()).resolves.toBe('ran');
        await held[1].release();
      });

      it('a nested @Locked call with the same permits joins the outer permit; another count is refused with LockShapeError', async () => {
        const [outer, inner] = await shapes.outerPermit('1', (id) =>
          shapes.innerPermit(id),
        );
        expect(inner).toBe(outer);
        expect(outer.resources).toEqual([
          expect.stringMatching(/^psp:1#permit-[01]$/),
        ]);
        const refused = await shapes
          .outerPermit('1', (id) => shapes.innerThreePermits(id))
          .catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(LockShapeError);
        expect(refused).toMatchObject({
          resource: 'psp:1',
          requested: '3 permits',
          current: '2 permits',
        });
      });

      it('a resource keeps one shape while used: another count, or a mutex, is refused with LockShapeError', async () => {
        const held = await locks.acquire('shaped', { permits: 2 });
        await expect(
          locks.acquire('shaped', { permits: 3 }),
        ).rejects.toBeInstanceOf(LockShapeError);
        await expect(locks.tryAcquire('shaped')).rejects.toThrow(
          /"shaped" as a mutex: it is held or acquired as a semaphore of 2 permits/,
        );
        await held.release();
        const mutex = await locks.acquire('shaped');
        await expect(locks.acquire('shaped', { permits: 2 })).rejects.toThrow(
          /as a semaphore of 2 permits: it is held or acquired as a mutex/,
        );
        await mutex.release();
      });

      it('answers 409 with Retry-After over HTTP while every permit is held', async () => {
        await app.listen(0, '127.0.0.1');
        const url = await app.getUrl();
        const held = [
          await locks.acquire('psp:9', { permits: 2, ttl: 3000 }),
          await locks.acquire('psp:9', { permits: 2, ttl: 3000 }),
        ];
        const refused = await fetch(`${url}/orders/psp/9`, { method: 'POST' });
        expect(refused.status).toBe(409);
        expect(
          Number(refused.headers.get('retry-after')),
        ).toBeGreaterThanOrEqual(1);
        expect(await refused.json()).toMatchObject({
          code: 'CONFLICT',
          resources: ['psp:9'],
        });
        await held[0].release();
        const served = await fetch(`${url}/orders/psp/9`, { method: 'POST' });
        expect(served.status).toBe(201);
        await held[1].release();
      });

      it('validates permits, naming the field', async () => {
        const error = await locks
          .acquire('bad', { permits: 0 })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RedlockConfigError);
        expect((error as RedlockConfigError).field).toBe('options.permits');
      });
    });

    describe('read/write locks (mode)', () => {
      it('@Locked readers run together, a writer alone', async () => {
        await Promise.all([
          shapes.read('1'),
          shapes.read('1'),
          shapes.read('1'),
          shapes.reprice('1'),
          shapes.read('1'),
          shapes.read('1'),
          shapes.reprice('1'),
        ]);
        expect(shapes.conflicts).toEqual([]);
        expect(shapes.mostReaders).toBeGreaterThan(1);
      });

      it('read locks hold the resource itself, together; a write lock alone', async () => {
        const r1 = await locks.acquire('rw', { mode: 'read' });
        const r2 = await locks.acquire('rw', { mode: 'read' });
        expect(r1.resources).toEqual(['rw']);
        expect(r2.isHeld).toBe(true);
        expect(await locks.tryAcquire('rw', { mode: 'write' })).toBeNull();
        await Promise.all([r1.release(), r2.release()]);
        const w = await locks.acquire('rw', { mode: 'write' });
        expect(w.resources).toEqual(['rw']);
        expect(await locks.tryAcquire('rw', { mode: 'read' })).toBeNull();
        expect(await locks.tryAcquire('rw', { mode: 'write' })).toBeNull();
        await w.release();
      });

      it('a writer waiting for readers keeps new readers out until it holds; one that gives up lets them in', async () => {
        const reader = await locks.acquire('fair', {
          mode: 'read',
          ttl: 5000,
        });
        const writing = locks.acquire('fair', {
          mode: 'write',
          waitTimeout: 3000,
        });
        await sleep(30);
        expect(await locks.tryAcquire('fair', { mode: 'read' })).toBeNull();
        await reader.release();
        const writer = await writing;
        expect(writer.isHeld).toBe(true);
        await writer.release();
        // A writer that gives up drops its intent.
        const again = await locks.acquire('fair', {
          mode: 'read',
          ttl: 5000,
        });
        const late = locks
          .acquire('fair', { mode: 'write', waitTimeout: 100 })
          .catch((e: unknown) => e);
        await harness.advance(200);
        expect(await late).toMatchObject({
          reason: 'busy',
          resources: ['fair'],
        });
        const next = await locks.tryAcquire('fair', { mode: 'read' });
        expect(next).not.toBeNull();
        await Promise.all([next!.release(), again.release()]);
      });

      it('a read inside a write of the same call chain joins it; a write inside a read is refused with LockUpgradeError', async () => {
        const [outer, inner] = await shapes.outerWrite('2', (id) =>
          shapes.innerRead(id),
        );
        expect(inner).toBe(outer);
        const upgrade = await shapes
          .outerRead('2', (id) => shapes.innerWrite(id))
          .catch((e: unknown) => e);
        expect(upgrade).toBeInstanceOf(LockUpgradeError);
        expect(upgrade).toMatchObject({
          resource: 'cat:2',
          method: '@Locked ShapesService.innerWrite',
        });
        // The outer read released: a writer gets it.
        const writer = await locks.tryAcquire('cat:2', { mode: 'write' });
        expect(writer).not.toBeNull();
        await writer!.release();
      });

      it('answers 409 with Retry-After over HTTP while a reader holds', async () => {
        await app.listen(0, '127.0.0.1');
        const url = await app.getUrl();
        const reader = await locks.acquire('cat:7', {
          mode: 'read',
          ttl: 3000,
        });
        const refused = await fetch(`${url}/orders/cat/7`, {
          method: 'POST',
        });
        expect(refused.status).toBe(409);
        expect(
          Number(refused.headers.get('retry-after')),
        ).toBeGreaterThanOrEqual(1);
        expect(await refused.json()).toMatchObject({
          code: 'CONFLICT',
          resources: ['cat:7'],
        });
        await reader.release();
        const served = await fetch(`${url}/orders/cat/7`, { method: 'POST' });
        expect(served.status).toBe(201);
      });

      it('a resource used as read/write is refused as a mutex or a semaphore; mode refuses permits and fencing, naming the field', async () => {
        const reader = await locks.acquire('rws', { mode: 'read' });
        await expect(locks.tryAcquire('rws')).rejects.toBeInstanceOf(
          LockShapeError,
        );
        await expect(locks.acquire('rws', { permits: 2 })).rejects.toThrow(
          /it is held or acquired as a read\/write lock/,
        );
        await reader.release();
        const cases: [object, string][] = [
          [{ mode: 'read', permits: 2 }, 'options.permits'],
          [{ mode: 'write', fencing: true }, 'options.fencing'],
          [{ mode: 'reader' }, 'options.mode'],
        ];
        for (const [options, field] of cases) {
          const error = await locks
            .acquire('rwx', options as AcquireOptions)
            .catch((e: unknown) => e);
          expect(error).toBeInstanceOf(RedlockConfigError);
          expect((error as RedlockConfigError).field).toBe(field);
        }
      });
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
