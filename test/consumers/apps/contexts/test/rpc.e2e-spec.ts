import type { Server } from 'node:net';
import type { INestMicroservice } from '@nestjs/common';
import {
  type ClientProxy,
  ClientProxyFactory,
  type MicroserviceOptions,
  Transport,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { isLockConflict, LockService } from 'nestjs-redlock';
import { firstValueFrom, timeout } from 'rxjs';
import { RpcAppModule } from '../src/rpc/rpc.module';
import {
  CapturingLogger,
  captureConsoleError,
} from '../src/shared/capturing-logger';
import { busyConflict } from '../src/shared/conflict';
import { nodeAddressesIn, stackFramesIn } from '../src/shared/leaks';
import { overlapOf } from '../src/shared/overlap';

/**
 * A TCP microservice: two instances stand for two replicas; clients are
 * ClientProxy instances, as another Nest service would call them.
 */
const run = `${process.pid}-${Date.now()}`;
const logger = new CapturingLogger();

async function boot(): Promise<{ app: INestMicroservice; port: number }> {
  const moduleRef = await Test.createTestingModule({ imports: [RpcAppModule] })
    .setLogger(logger)
    .compile();
  const app = moduleRef.createNestMicroservice<MicroserviceOptions>({
    transport: Transport.TCP,
    options: { host: '127.0.0.1', port: 0 },
    // A failed start throws here instead of exiting the test process.
    abortOnError: false,
  });
  app.useLogger(logger);
  await app.listen();
  const { port } = app.unwrap<Server>().address() as { port: number };
  return { app, port };
}

/** What `send()` errored with (or its value, when it did not). */
async function outcome(
  client: ClientProxy,
  pattern: string,
  data: unknown,
): Promise<{ value?: unknown; error?: unknown }> {
  try {
    return {
      value: await firstValueFrom(
        client.send(pattern, data).pipe(timeout(15_000)),
      ),
    };
  } catch (error) {
    return { error };
  }
}

describe('RPC (TCP microservice)', () => {
  const apps: INestMicroservice[] = [];
  const clients: ClientProxy[] = [];
  let a: INestMicroservice;
  let b: INestMicroservice;
  let consoleError: ReturnType<typeof captureConsoleError>;
  const received: unknown[] = [];

  beforeAll(async () => {
    consoleError = captureConsoleError();
    for (let i = 0; i < 2; i++) {
      const { app, port } = await boot();
      apps.push(app);
      const client = ClientProxyFactory.create({
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port },
      });
      await client.connect();
      clients.push(client);
    }
    [a, b] = apps;
  });

  afterAll(async () => {
    consoleError?.restore();
    for (const client of clients) await client.close();
    for (const app of apps) await app.close();
  });

  it('serialises one SKU across two instances (no overlap)', async () => {
    const sku = `serial-${run}`;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        outcome(clients[i % 2], 'reserve', { sku }),
      ),
    );
    expect(results).toEqual(Array(10).fill({ value: { sku, reserved: true } }));
    expect(overlapOf(`sku:${sku}`)).toEqual({ active: 0, max: 1, entries: 10 });
  });

  it.each([
    ['another instance', () => b],
    ['the same instance', () => a],
  ])(
    'errors send() with the conflict while %s holds the lock',
    async (_, holder) => {
      const sku = `held-${holder() === a ? 'a' : 'b'}-${run}`;
      const resource = `sku:${sku}`;
      const lock = await holder()
        .get(LockService)
        .acquire(resource, { ttl: 30_000 });
      let results: { value?: unknown; error?: any }[];
      try {
        results = await Promise.all([
          outcome(clients[0], 'reserve-now', { sku }),
          outcome(clients[0], 'reserve-now', { sku }),
        ]);
      } finally {
        await lock.release();
      }
      received.push(...results);
      for (const { error } of results) {
        const ms = error?.retryAfterMs;
        expect({ error }).toEqual({
          error: { status: 'error', ...busyConflict([resource], ms) },
        });
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(30_000);
        expect(isLockConflict(error)).toBe(true);
      }
      expect(await outcome(clients[0], 'reserve-now', { sku })).toEqual({
        value: { sku, reserved: true },
      });
    },
  );

  it('names no Redis node and no stack frame in the errors', () => {
    expect(received.length).toBeGreaterThan(0);
    expect(nodeAddressesIn(received)).toEqual([]);
    expect(stackFramesIn(received)).toEqual([]);
  });

  it('logs no ERROR line for the conflicts', () => {
    expect(logger.errors()).toEqual([]);
    expect(consoleError.calls).toEqual([]);
  });

  it("answers a key it cannot build (LockKeyError) as Nest's unknown RPC error", async () => {
    const result = await outcome(clients[0], 'reserve-now', {});
    expect(result).toEqual({
      error: { status: 'error', message: 'Internal server error' },
    });
    expect(isLockConflict(result.error)).toBe(false);
  });
});
