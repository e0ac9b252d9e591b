import type { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  FastifyAdapter,
  type NestFastifyApplication,
} from '@nestjs/platform-fastify';
import { isLockConflict, type Lock, LockService } from 'nestjs-redlock';
import {
  FastifyAppModule,
  FastifyUserFilterAppModule,
} from '../src/fastify/fastify.module';
import {
  CapturingLogger,
  captureConsoleError,
} from '../src/shared/capturing-logger';
import { busyConflict, retryAfterSeconds } from '../src/shared/conflict';
import { http, type HttpAnswer, urlOf } from '../src/shared/http';
import { nodeAddressesIn, stackFramesIn } from '../src/shared/leaks';
import { overlapOf } from '../src/shared/overlap';

/**
 * HTTP on Fastify: two app instances stand for two replicas; the lock is
 * held from the other instance (or the same one) through LockService, and
 * what the client gets is compared with the contract (docs: LockConflict).
 */
const run = `${process.pid}-${Date.now()}`;
const logger = new CapturingLogger();

async function boot(module: Type): Promise<NestFastifyApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [module] })
    .setLogger(logger)
    .compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(
    new FastifyAdapter(),
    // A failed start throws here instead of exiting the test process.
    { abortOnError: false },
  );
  app.useLogger(logger);
  await app.listen(0, '127.0.0.1');
  return app;
}

/** Holds `resource` through `app`'s LockService for the duration of `fn`. */
async function holding<T>(
  app: NestFastifyApplication,
  resource: string,
  fn: () => Promise<T>,
): Promise<T> {
  const lock: Lock = await app
    .get(LockService)
    .acquire(resource, { ttl: 30_000 });
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

/** Everything the client saw, for the leak checks. */
function seen(answer: HttpAnswer) {
  return { status: answer.status, headers: answer.headers, text: answer.text };
}

describe('HTTP on Fastify', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let filtered: NestFastifyApplication;
  let urlA: string;
  let urlFiltered: string;
  let consoleError: ReturnType<typeof captureConsoleError>;
  const answers: HttpAnswer[] = [];

  beforeAll(async () => {
    consoleError = captureConsoleError();
    a = await boot(FastifyAppModule);
    b = await boot(FastifyAppModule);
    filtered = await boot(FastifyUserFilterAppModule);
    urlA = urlOf(a.getHttpServer());
    urlFiltered = urlOf(filtered.getHttpServer());
  });

  afterAll(async () => {
    consoleError?.restore();
    for (const app of [a, b, filtered]) await app?.close();
  });

  it('serialises one SKU across two instances (no overlap)', async () => {
    const sku = `serial-${run}`;
    const urls = [urlA, urlOf(b.getHttpServer())];
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        http(`${urls[i % 2]}/stock/${sku}/reserve`, { method: 'POST' }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(overlapOf(`sku:${sku}`)).toEqual({ active: 0, max: 1, entries: 10 });
  });

  it.each([
    ['another instance', () => b],
    ['the same instance', () => a],
  ])(
    'answers a lock held by %s with 409, Retry-After and the conflict body',
    async (_, holder) => {
      const sku = `held-${holder() === a ? 'a' : 'b'}-${run}`;
      const resource = `sku:${sku}`;
      const url = `${urlA}/stock/${sku}/reserve-now`;
      const [first, second, third] = await holding(
        holder(),
        resource,
        async () => {
          // Two identical requests at once, then a third: one answer.
          const pair = await Promise.all([
            http(url, { method: 'POST' }),
            http(url, { method: 'POST' }),
          ]);
          return [...pair, await http(url, { method: 'POST' })];
        },
      );
      answers.push(first, second, third);

      // One comparison of all the client sees, so a failure shows it whole.
      const expected = (answer: HttpAnswer) => {
        const ms = answer.body?.retryAfterMs;
        return {
          status: 409,
          contentType: expect.stringMatching(/^application\/json/),
          retryAfter: String(retryAfterSeconds(ms)),
          body: { ...busyConflict([resource], ms), error: 'Conflict' },
        };
      };
      const got = (answer: HttpAnswer) => ({
        status: answer.status,
        contentType: answer.headers['content-type'],
        retryAfter: answer.headers['retry-after'],
        body: answer.body,
      });
      for (const answer of [first, second, third])
        expect(got(answer)).toEqual(expected(answer));
      const { retryAfterMs } = first.body;
      expect(Number.isInteger(retryAfterMs)).toBe(true);
      expect(retryAfterMs).toBeGreaterThanOrEqual(0);
      // The holder's lease (30 s) is what is left to wait.
      expect(retryAfterMs).toBeLessThanOrEqual(30_000);
      // Identical requests against one held lock: one Retry-After (the
      // requests come within ms of the 30 s lease's start, so its rest rounds
      // up to the same second).
      expect(second.headers['retry-after']).toBe(first.headers['retry-after']);
      expect(third.headers['retry-after']).toBe(first.headers['retry-after']);
      expect(isLockConflict(first.body)).toBe(true);
      // Free again once the holder let go.
      const after = await http(url, { method: 'POST' });
      expect(after.status).toBe(201);
    },
  );

  it('names no Redis node and no stack frame in any answer', () => {
    expect(answers.length).toBeGreaterThan(0);
    for (const answer of answers) {
      expect(nodeAddressesIn(seen(answer))).toEqual([]);
      expect(stackFramesIn(seen(answer))).toEqual([]);
    }
  });

  it('logs no ERROR line for the conflicts', () => {
    expect(logger.errors()).toEqual([]);
    expect(consoleError.calls).toEqual([]);
  });

  it('answers a key it cannot build (LockKeyError) as an unknown error: 500', async () => {
    const answer = await http(`${urlA}/stock/reserve`, {
      method: 'POST',
      body: {},
    });
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({
      statusCode: 500,
      message: 'Internal server error',
    });
    expect(answer.headers['retry-after']).toBeUndefined();
    expect(nodeAddressesIn(seen(answer))).toEqual([]);
    // With a key, the same route works.
    const ok = await http(`${urlA}/stock/reserve`, {
      method: 'POST',
      body: { sku: `body-${run}` },
    });
    expect(ok.status).toBe(201);
  });

  it('answers a @LockKey the request cannot supply with 400', async () => {
    const answer = await http(`${urlA}/stock/intercepted`, {
      method: 'POST',
      body: {},
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('Cannot build the lock key'),
    });
    expect(nodeAddressesIn(seen(answer))).toEqual([]);
  });

  it("lets the user's global filter for LockNotAcquiredError answer instead", async () => {
    const sku = `filtered-${run}`;
    const answer = await holding(b, `sku:${sku}`, () =>
      http(`${urlFiltered}/stock/${sku}/reserve-now`, { method: 'POST' }),
    );
    expect(answer.status).toBe(429);
    expect(answer.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      busy: [`sku:${sku}`],
    });
    expect(answer.headers['x-busy']).toBe(`sku:${sku}`);
    // The library's answer did not run as well.
    expect(answer.headers['retry-after']).toBeUndefined();
  });
});
