import type { Type } from '@nestjs/common';
import {
  FastifyAdapter,
  type NestFastifyApplication,
} from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { isLockConflict, LockService } from 'nestjs-redlock';
import {
  FAIL,
  gql,
  REFUSE,
  RESERVE,
  RESERVE_INPUT,
  RESERVE_NOW,
} from '../src/graphql/gql';
import {
  MercuriusAppModule,
  MercuriusUserFilterAppModule,
} from '../src/graphql/mercurius.module';
import {
  CapturingLogger,
  captureConsoleError,
} from '../src/shared/capturing-logger';
import { busyConflict } from '../src/shared/conflict';
import { type HttpAnswer, urlOf } from '../src/shared/http';
import { nodeAddressesIn, stackFramesIn } from '../src/shared/leaks';
import { overlapOf } from '../src/shared/overlap';

/**
 * GraphQL with Mercurius (code-first, on Fastify): two app instances stand
 * for two replicas, a third has the user's own conflict filter.
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

describe('GraphQL with Mercurius', () => {
  let a: NestFastifyApplication;
  let b: NestFastifyApplication;
  let filtered: NestFastifyApplication;
  let consoleError: ReturnType<typeof captureConsoleError>;
  let resolverErrorStatus: number;
  const url = (app: NestFastifyApplication) => urlOf(app.getHttpServer());
  const received: HttpAnswer[] = [];

  beforeAll(async () => {
    consoleError = captureConsoleError();
    a = await boot(MercuriusAppModule);
    b = await boot(MercuriusAppModule);
    filtered = await boot(MercuriusUserFilterAppModule);
    // The status Mercurius gives an ordinary resolver error (an HttpException: not logged).
    resolverErrorStatus = (await gql(url(a), REFUSE)).status;
  });

  afterAll(async () => {
    consoleError?.restore();
    for (const app of [a, b, filtered]) await app?.close();
  });

  async function whileHeld(
    holder: NestFastifyApplication,
    resource: string,
    fn: () => Promise<HttpAnswer>,
  ): Promise<HttpAnswer> {
    const lock = await holder
      .get(LockService)
      .acquire(resource, { ttl: 30_000 });
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  it('serialises one SKU across two instances (no overlap)', async () => {
    const sku = `serial-${run}`;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gql(url(i % 2 ? a : b), RESERVE, { sku }),
      ),
    );
    for (const answer of answers)
      expect(answer.body).toEqual({
        data: { reserve: { sku, reserved: true } },
      });
    expect(overlapOf(`sku:${sku}`)).toEqual({ active: 0, max: 1, entries: 10 });
  });

  it.each([
    ['another instance', () => b],
    ['the same instance', () => a],
  ])(
    'gives the conflict as the resolver error while %s holds the lock',
    async (name, holder) => {
      const sku = `held-${name.replace(/\W+/g, '-')}-${run}`;
      const resource = `sku:${sku}`;
      const answer = await whileHeld(holder(), resource, () =>
        gql(url(a), RESERVE_NOW, { sku }),
      );
      received.push(answer);
      const error = answer.body?.errors?.[0];
      const ms = error?.extensions?.retryAfterMs;
      const { message, ...fields } = busyConflict([resource], ms);
      expect({
        status: answer.status,
        data: answer.body?.data,
        message: error?.message,
        extensions: error?.extensions,
      }).toEqual({
        status: resolverErrorStatus,
        data: null,
        message,
        extensions: fields,
      });
      expect(answer.body.errors).toHaveLength(1);
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(30_000);
      expect(isLockConflict(error)).toBe(true);
      expect(stackFramesIn(answer.body)).toEqual([]);
      expect(stackFramesIn(answer.headers)).toEqual([]);
    },
  );

  it('names no Redis node in any answer', () => {
    expect(received.length).toBeGreaterThan(0);
    for (const { status, headers, text } of received)
      expect(nodeAddressesIn({ status, headers, text })).toEqual([]);
  });

  it('logs no ERROR line for the conflicts', () => {
    expect(logger.errors()).toEqual([]);
    expect(consoleError.calls).toEqual([]);
  });

  it('answers a key it cannot build (LockKeyError) as it answers any unknown error', async () => {
    const answer = await gql(url(a), RESERVE_INPUT, { input: {} });
    // Mercurius gives an unknown error no `extensions.code` (Apollo says
    // INTERNAL_SERVER_ERROR): the control is a resolver throwing an Error.
    const control = await gql(url(a), FAIL);
    expect(answer.body.errors).toHaveLength(1);
    const [error] = answer.body.errors;
    const [unknown] = control.body.errors;
    expect({
      status: answer.status,
      data: answer.body.data,
      fields: Object.keys(error).sort(),
      extensions: error.extensions,
    }).toEqual({
      status: control.status,
      data: control.body.data,
      fields: Object.keys(unknown).sort(),
      extensions: unknown.extensions,
    });
    expect(error.message).toMatch(/^Cannot build the lock key/);
    expect(isLockConflict(error)).toBe(false);
    const { status, headers, text } = answer;
    expect(nodeAddressesIn({ status, headers, text })).toEqual([]);
  });

  it("lets the user's global filter for LockNotAcquiredError answer instead", async () => {
    const sku = `filtered-${run}`;
    const answer = await whileHeld(b, `sku:${sku}`, () =>
      gql(url(filtered), RESERVE_NOW, { sku }),
    );
    const [error] = answer.body.errors;
    expect(error.message).toBe('Busy, try again later');
    expect(error.extensions).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      busy: [`sku:${sku}`],
    });
    expect(isLockConflict(error)).toBe(false);
  });
});
