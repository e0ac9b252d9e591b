import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:net';
import {
  Controller,
  type INestApplication,
  type INestMicroservice,
  type LoggerService,
  Module,
  Param,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import {
  ClientProxyFactory,
  MessagePattern,
  type ClientProxy,
  type MicroserviceOptions,
  Payload,
  Transport,
} from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  MessageBody,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import {
  type Lock,
  Locked,
  lockConflictOf,
  LockInterceptor,
  LockKey,
  LockService,
  Redlock,
  RedlockModule,
} from 'nestjs-redlock';
import { firstValueFrom, timeout } from 'rxjs';
import { io } from 'socket.io-client';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

/**
 * What a caller of each context gets when a semaphore is full: the same
 * conflict as for a mutex (409, Retry-After, the resource asked for, not
 * the slot), through `@Locked` and `@LockKey`; and a LockShapeError, a
 * programming error, answered as LockKeyError is from `@Locked` (500,
 * logged with its message).
 */
const prefix = uniquePrefix('sem-ctx');
const PERMITS = 2;

/** Keeps the error lines Nest logs. */
class ErrorLines implements LoggerService {
  readonly errors: string[] = [];
  log() {}
  warn() {}
  error(message: unknown, ...rest: unknown[]) {
    this.errors.push([message, ...rest].map(String).join(' '));
  }
}

@Controller('psp')
class PspController {
  @Post(':merchantId/charge')
  @Locked('psp:<merchantId>', { permits: PERMITS, waitTimeout: 0 })
  async charge(@Param('merchantId') merchantId: string) {
    await Promise.resolve();
    return { merchantId, slot: LockService.current()!.resources[0] };
  }

  @Post(':merchantId/intercepted')
  @UseInterceptors(LockInterceptor)
  @LockKey('psp:<params.merchantId>', { permits: PERMITS, waitTimeout: 0 })
  async intercepted(@Param('merchantId') merchantId: string) {
    await Promise.resolve();
    return { merchantId, slot: LockService.current()!.resources[0] };
  }

  /** The same resource as a mutex: wrong while this app uses it as a semaphore. */
  @Post(':merchantId/refund')
  @Locked('psp:<merchantId>', { waitTimeout: 0 })
  async refund(@Param('merchantId') merchantId: string) {
    await Promise.resolve();
    return { merchantId };
  }

  @Post('catalogue/:id/reprice')
  @Locked('catalogue:<id>', { mode: 'write', waitTimeout: 0 })
  async reprice(@Param('id') id: string) {
    await Promise.resolve();
    return { id, repriced: true };
  }

  /** A read that writes in a nested call: a bug, refused with LockUpgradeError. */
  @Post('catalogue/:id/read-then-write')
  @Locked('catalogue:<id>', { mode: 'read', waitTimeout: 0 })
  async readThenWrite(@Param('id') id: string) {
    return this.reprice(id);
  }

  @MessagePattern('charge')
  @Locked('psp:<dto.merchantId>', { permits: PERMITS, waitTimeout: 0 })
  async chargeRpc(@Payload() dto: { merchantId: string }) {
    await Promise.resolve();
    return { merchantId: dto.merchantId };
  }
}

@WebSocketGateway()
class PspGateway {
  @SubscribeMessage('charge')
  @Locked('psp:<dto.merchantId>', { permits: PERMITS, waitTimeout: 0 })
  async charge(@MessageBody() dto: { merchantId: string }) {
    await Promise.resolve();
    return { merchantId: dto.merchantId };
  }
}

@Module({
  imports: [
    RedlockModule.forRoot({
      clients: quorumUrls(),
      keyPrefix: prefix,
      logger: { warn: () => undefined },
    }),
  ],
  controllers: [PspController],
})
class PspModule {}

@Module({ imports: [PspModule], providers: [PspGateway] })
class PspWithGatewayModule {}

describe('a full semaphore, answered in each context', () => {
  // "Another replica": holds every permit while a request comes in.
  const other = new Redlock({
    clients: quorumUrls(),
    keyPrefix: prefix,
    logger: { warn: () => undefined },
  });
  const full = async (resource: string): Promise<Lock[]> =>
    Promise.all(
      Array.from({ length: PERMITS }, () =>
        other.acquire(resource, { permits: PERMITS, ttl: 30_000 }),
      ),
    );
  const releaseAll = (locks: Lock[]) =>
    Promise.all(locks.map((lock) => lock.release()));
  afterAll(() => other.quit());

  describe.each([
    ['Express', () => undefined],
    ['Fastify', () => new FastifyAdapter()],
  ])('HTTP on %s', (_name, adapter) => {
    let app: INestApplication;
    let url: string;
    const logger = new ErrorLines();

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [PspModule],
      }).compile();
      const httpAdapter = adapter();
      app = httpAdapter
        ? moduleRef.createNestApplication(httpAdapter, { logger })
        : moduleRef.createNestApplication({ logger });
      await app.listen(0, '127.0.0.1');
      url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    });
    afterAll(() => app.close());

    it.each(['charge', 'intercepted'])(
      'answers 409 with Retry-After and the resource asked for while every permit is held elsewhere (%s), 201 once one is free',
      async (route) => {
        const merchant = `h-${_name}-${route}`;
        const held = await full(`psp:${merchant}`);
        const refused = await fetch(`${url}/psp/${merchant}/${route}`, {
          method: 'POST',
        });
        expect(refused.status).toBe(409);
        const retryAfter = Number(refused.headers.get('retry-after'));
        // The holders' leases: about their 30 s ttl.
        expect(retryAfter).toBeGreaterThanOrEqual(25);
        expect(retryAfter).toBeLessThanOrEqual(30);
        const body = (await refused.json()) as Record<string, unknown>;
        expect(body).toMatchObject({
          name: 'LockNotAcquiredError',
          code: 'CONFLICT',
          statusCode: 409,
          error: 'Conflict',
          reason: 'busy',
          resources: [`psp:${merchant}`],
        });
        expect(body.message).toBe(
          `The resource is locked: psp:${merchant}. Retry after ${retryAfter} s.`,
        );
        await held[0].release();
        const served = await fetch(`${url}/psp/${merchant}/${route}`, {
          method: 'POST',
        });
        expect(served.status).toBe(201);
        expect(await served.json()).toEqual({
          merchantId: merchant,
          slot: held[0].resources[0],
        });
        await releaseAll(held);
      },
    );

    it('answers a LockShapeError (a mutex on a resource this app holds as a semaphore) with 500, and logs its message', async () => {
      const merchant = `shape-${_name}`;
      const semaphore = await app
        .get(LockService)
        .acquire(`psp:${merchant}`, { permits: PERMITS });
      const response = await fetch(`${url}/psp/${merchant}/refund`, {
        method: 'POST',
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({
        statusCode: 500,
        message: 'Internal server error',
      });
      expect(logger.errors.join('\n')).toContain(
        `Cannot lock "psp:${merchant}" as a mutex: it is held or acquired as a semaphore of ${PERMITS} permits in this process`,
      );
      await semaphore.release();
      const after = await fetch(`${url}/psp/${merchant}/refund`, {
        method: 'POST',
      });
      expect(after.status).toBe(201);
    });

    it('answers 409 with Retry-After and the resource to a write while a reader holds elsewhere, 201 once it left', async () => {
      const id = `rw-${_name}`;
      const reader = await other.acquire(`catalogue:${id}`, {
        mode: 'read',
        ttl: 30_000,
      });
      const refused = await fetch(`${url}/psp/catalogue/${id}/reprice`, {
        method: 'POST',
      });
      expect(refused.status).toBe(409);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(
        25,
      );
      expect(await refused.json()).toMatchObject({
        code: 'CONFLICT',
        reason: 'busy',
        resources: [`catalogue:${id}`],
      });
      await reader.release();
      const served = await fetch(`${url}/psp/catalogue/${id}/reprice`, {
        method: 'POST',
      });
      expect(served.status).toBe(201);
    });

    it('answers a write nested in a read of the same call (LockUpgradeError) with 500, and logs its message', async () => {
      const id = `up-${_name}`;
      const response = await fetch(
        `${url}/psp/catalogue/${id}/read-then-write`,
        {
          method: 'POST',
        },
      );
      expect(response.status).toBe(500);
      expect(logger.errors.join('\n')).toContain(
        `@Locked PspController.reprice cannot lock "catalogue:${id}" for writing: an enclosing call of the same call chain holds it for reading`,
      );
      // Nothing stayed held: a writer gets it at once.
      const writer = await other.tryAcquire(`catalogue:${id}`, {
        mode: 'write',
      });
      expect(writer).not.toBeNull();
      await writer!.release();
    });
  });

  describe('microservices (TCP)', () => {
    let app: INestMicroservice;
    let client: ClientProxy;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [PspModule],
      }).compile();
      app = moduleRef.createNestMicroservice<MicroserviceOptions>({
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port: 0 },
        logger: false,
      });
      await app.listen();
      const { port } = app.unwrap<Server>().address() as { port: number };
      client = ClientProxyFactory.create({
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port },
      });
      await client.connect();
    });
    afterAll(async () => {
      await client.close();
      await app.close();
    });

    it('the client gets the RPC error { status: "error", code: "CONFLICT", ... } naming the resource', async () => {
      const held = await full('psp:rpc');
      const error = await firstValueFrom(
        client.send('charge', { merchantId: 'rpc' }).pipe(timeout(10_000)),
      ).catch((e: unknown) => e);
      await releaseAll(held);
      expect(error).toMatchObject({
        status: 'error',
        code: 'CONFLICT',
        reason: 'busy',
        resources: ['psp:rpc'],
      });
      expect(lockConflictOf(error)?.retryAfterMs).toBeGreaterThan(25_000);
      await expect(
        firstValueFrom(client.send('charge', { merchantId: 'rpc' })),
      ).resolves.toEqual({ merchantId: 'rpc' });
    });
  });

  describe('WebSockets (socket.io)', () => {
    let app: INestApplication;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [PspWithGatewayModule],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
    });
    afterAll(() => app.close());

    it('the acknowledgement and the exception event carry the conflict naming the resource', async () => {
      const { port } = (app.getHttpServer() as Server).address() as {
        port: number;
      };
      const socket = io(`http://127.0.0.1:${port}`, {
        transports: ['websocket'],
        reconnection: false,
        forceNew: true,
      });
      const exceptions: unknown[] = [];
      socket.on('exception', (payload: unknown) => exceptions.push(payload));
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('connect_error', reject);
      });
      try {
        const held = await full('psp:ws');
        const reply: unknown = await socket
          .timeout(5_000)
          .emitWithAck('charge', { merchantId: 'ws' });
        await releaseAll(held);
        expect(reply).toMatchObject({
          status: 'error',
          code: 'CONFLICT',
          resources: ['psp:ws'],
        });
        expect(exceptions).toEqual([reply]);
        await expect(
          socket.timeout(5_000).emitWithAck('charge', { merchantId: 'ws' }),
        ).resolves.toEqual({ merchantId: 'ws' });
      } finally {
        socket.disconnect();
      }
    });
  });
});
