import type { INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { isLockConflict, LockService } from 'nestjs-redlock';
import {
  ApolloAppModule,
  ApolloUserFilterAppModule,
} from '../src/graphql/apollo.module';
import {
  gql,
  REFUSE,
  RESERVE,
  RESERVE_INPUT,
  RESERVE_NOW,
} from '../src/graphql/gql';
import {
  CapturingLogger,
  captureConsoleError,
} from '../src/shared/capturing-logger';
import { busyConflict } from '../src/shared/conflict';
import { type HttpAnswer, urlOf } from '../src/shared/http';
import { nodeAddressesIn, stackFramesIn } from '../src/shared/leaks';
import { overlapOf } from '../src/shared/overlap';

/**
 * GraphQL with Apollo (code-first, on Express): two app instances stand for
 * two replicas, a third runs with NODE_ENV=production (Apollo leaves stack
 * traces out there only), a fourth has the user's own conflict filter.
 */
const run = `${process.pid}-${Date.now()}`;
const logger = new CapturingLogger();

async function boot(module: Type, nodeEnv?: string): Promise<INestApplication> {
  const before = process.env.NODE_ENV;
  // Apollo reads NODE_ENV when the server starts (app.listen → init).
  if (nodeEnv) process.env.NODE_ENV = nodeEnv;
  try {
    const moduleRef = await Test.createTestingModule({ imports: [module] })
      .setLogger(logger)
      .compile();
    // A failed start throws here instead of exiting the test process.
    const app = moduleRef.createNestApplication({ abortOnError: false });
    app.useLogger(logger);
    await app.listen(0, '127.0.0.1');
    return app;
  } finally {
    process.env.NODE_ENV = before;
  }
}

describe('GraphQL with Apollo', () => {
  let a: INestApplication;
  let b: INestApplication;
  let production: INestApplication;
  let filtered: INestApplication;
  let consoleError: ReturnType<typeof captureConsoleError>;
  const url = (app: INestApplication) => urlOf(app.getHttpServer());
  const received: HttpAnswer[] = [];

  beforeAll(async () => {
    consoleError = captureConsoleError();
    a = await boot(ApolloAppModule);
    b = await boot(ApolloAppModule);
    production = await boot(ApolloAppModule, 'production');
    filtered = await boot(ApolloUserFilterAppModule);
  });

  afterAll(async () => {
    consoleError?.restore();
    for (const app of [a, b, production, filtered]) await app?.close();
  });

  /** `query` against `app` while `holder` holds `resource`. */
  async function whileHeld(
    holder: INestApplication,
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
    ['another instance', () => b, () => a],
    ['the same instance', () => a, () => a],
    ['another instance (NODE_ENV=production)', () => b, () => production],
  ])(
    'gives the conflict as the resolver error while %s holds the lock',
    async (name, holder, target) => {
      const sku = `held-${name.replace(/\W+/g, '-')}-${run}`;
      const resource = `sku:${sku}`;
      const answer = await whileHeld(holder(), resource, () =>
        gql(url(target()), RESERVE_NOW, { sku }),
      );
      received.push(answer);
      const error = answer.body?.errors?.[0];
      const ms = error?.extensions?.retryAfterMs;
      const { message, ...fields } = busyConflict([resource], ms);
      const { stacktrace, ...extensions } = error?.extensions ?? {};
      expect({
        status: answer.status,
        data: answer.body?.data,
        message: error?.message,
        extensions,
      }).toEqual({
        status: 200,
        data: null,
        message,
        extensions: fields,
      });
      // Outside production Apollo adds the error's stack: one line, no frames.
      if (target() === production) expect(stacktrace).toBeUndefined();
      else
        expect([
          undefined,
          [`LockNotAcquiredError: ${message}`],
        ]).toContainEqual(stacktrace);
      expect(answer.body.errors).toHaveLength(1);
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(30_000);
      expect(isLockConflict(error)).toBe(true);
      expect(stackFramesIn(answer.body)).toEqual([]);
      expect(stackFramesIn(answer.headers)).toEqual([]);
    },
  );

  it('keeps the status Apollo gives an ordinary resolver error (200)', async () => {
    const control = await gql(url(a), REFUSE);
    expect(control.status).toBe(200);
    expect(control.body.errors[0].message).toBe('refused');
  });

  it('names no Redis node in any answer', () => {
    expect(received.length).toBeGreaterThan(0);
    for (const { status, headers, text } of received)
      expect(nodeAddressesIn({ status, headers, text })).toEqual([]);
  });

  it('logs no ERROR line for the conflicts', () => {
    expect(logger.errors()).toEqual([]);
    expect(consoleError.calls).toEqual([]);
  });

  it.each([
    ['development', () => a],
    ['production', () => production],
  ])(
    'answers a key it cannot build (LockKeyError) as INTERNAL_SERVER_ERROR (%s)',
    async (_, target) => {
      const answer = await gql(url(target()), RESERVE_INPUT, { input: {} });
      expect(answer.status).toBe(200);
      expect(answer.body.errors).toHaveLength(1);
      expect(answer.body.errors[0].extensions.code).toBe(
        'INTERNAL_SERVER_ERROR',
      );
      expect(isLockConflict(answer.body.errors[0])).toBe(false);
      const { status, headers, text } = answer;
      expect(nodeAddressesIn({ status, headers, text })).toEqual([]);
    },
  );

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
