import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { isLockConflict, LockService } from 'nestjs-redlock';
import { io, type Socket } from 'socket.io-client';
import {
  CapturingLogger,
  captureConsoleError,
} from '../src/shared/capturing-logger';
import { busyConflict } from '../src/shared/conflict';
import { urlOf } from '../src/shared/http';
import { nodeAddressesIn, stackFramesIn } from '../src/shared/leaks';
import { overlapOf } from '../src/shared/overlap';
import { WsAppModule } from '../src/ws/ws.module';

/**
 * A socket.io gateway: two app instances stand for two replicas, several
 * clients on each. Conflicts must reach the client twice: as the
 * `exception` event, and as the reply to an acknowledgement it waits for.
 */
const run = `${process.pid}-${Date.now()}`;
const logger = new CapturingLogger();
const ACK_MS = 3_000;

async function boot(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [WsAppModule] })
    .setLogger(logger)
    .compile();
  // A failed start throws here instead of exiting the test process.
  const app = moduleRef.createNestApplication({ abortOnError: false });
  app.useLogger(logger);
  await app.listen(0, '127.0.0.1');
  return app;
}

/** A connected client that records its `exception` events. */
async function connect(
  app: INestApplication,
): Promise<{ socket: Socket; exceptions: unknown[] }> {
  const socket = io(urlOf(app.getHttpServer()), {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    timeout: 5_000,
  });
  const exceptions: unknown[] = [];
  socket.on('exception', (payload: unknown) => exceptions.push(payload));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  return { socket, exceptions };
}

/** The ack's reply, or `{ timedOut: true }` when none came within ACK_MS. */
async function ack(socket: Socket, event: string, data: unknown) {
  try {
    return { reply: await socket.timeout(ACK_MS).emitWithAck(event, data) };
  } catch {
    return { timedOut: true };
  }
}

/** Waits until `list` has `n` entries, or `ms` passed. */
async function until(list: unknown[], n: number, ms = ACK_MS): Promise<void> {
  const end = Date.now() + ms;
  while (list.length < n && Date.now() < end)
    await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('WebSockets (socket.io gateway)', () => {
  let a: INestApplication;
  let b: INestApplication;
  const sockets: Socket[] = [];
  let consoleError: ReturnType<typeof captureConsoleError>;
  const received: unknown[] = [];

  beforeAll(async () => {
    consoleError = captureConsoleError();
    a = await boot();
    b = await boot();
  });

  afterAll(async () => {
    consoleError?.restore();
    for (const socket of sockets) socket.disconnect();
    for (const app of [a, b]) await app?.close();
  });

  const client = async (app: INestApplication) => {
    const connected = await connect(app);
    sockets.push(connected.socket);
    return connected;
  };

  it('serialises one SKU across clients of two instances (no overlap)', async () => {
    const sku = `serial-${run}`;
    const clients = await Promise.all([a, a, b, b].map(client));
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        clients[i % clients.length].socket
          .timeout(15_000)
          .emitWithAck('reserve', { sku }),
      ),
    );
    expect(replies).toEqual(Array(12).fill({ sku, reserved: true }));
    expect(overlapOf(`sku:${sku}`)).toEqual({ active: 0, max: 1, entries: 12 });
    for (const { exceptions } of clients) expect(exceptions).toEqual([]);
  });

  it.each([
    ['another instance', () => b],
    ['the same instance', () => a],
  ])(
    'sends the conflict as the exception event and the ack while %s holds the lock',
    async (_, holder) => {
      const sku = `held-${holder() === a ? 'a' : 'b'}-${run}`;
      const resource = `sku:${sku}`;
      const { socket, exceptions } = await client(a);
      const lock = await holder()
        .get(LockService)
        .acquire(resource, { ttl: 30_000 });
      let answer: { reply?: any; timedOut?: boolean };
      try {
        answer = await ack(socket, 'reserve-now', { sku });
        await until(exceptions, 1);
      } finally {
        await lock.release();
      }
      received.push(answer, ...exceptions);
      const ms = answer.reply?.retryAfterMs;
      const payload = { status: 'error', ...busyConflict([resource], ms) };
      expect({ ack: answer, exceptions }).toEqual({
        ack: { reply: payload },
        exceptions: [payload],
      });
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(30_000);
      expect(isLockConflict(exceptions[0])).toBe(true);
      expect(await ack(socket, 'reserve-now', { sku })).toEqual({
        reply: { sku, reserved: true },
      });
    },
  );

  it('names no Redis node and no stack frame in the payloads', () => {
    expect(received.length).toBeGreaterThan(0);
    expect(nodeAddressesIn(received)).toEqual([]);
    expect(stackFramesIn(received)).toEqual([]);
  });

  it('logs no ERROR line for the conflicts', () => {
    expect(logger.errors()).toEqual([]);
    expect(consoleError.calls).toEqual([]);
  });

  it("answers a key it cannot build (LockKeyError) with Nest's unknown-error exception", async () => {
    const { socket, exceptions } = await client(a);
    socket.emit('reserve-now', {});
    await until(exceptions, 1);
    // Nest's gateways add the event as `cause` (includeCause, on by default).
    expect(exceptions).toEqual([
      {
        status: 'error',
        message: 'Internal server error',
        cause: { pattern: 'reserve-now', data: {} },
      },
    ]);
    expect(isLockConflict(exceptions[0])).toBe(false);
  });
});
