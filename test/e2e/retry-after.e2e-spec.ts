import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Locked,
  LockNotAcquiredError,
  LockService,
  RedlockConfigError,
  RedlockModule,
  type RedlockModuleOptions,
} from 'nestjs-redlock';
import { quorumUrls, uniquePrefix } from '../utils/nodes.js';

const prefix = uniquePrefix('retry-after');

@Controller('orders')
class OrdersController {
  constructor(private readonly locks: LockService) {}

  /** LockService.run: the module's retryAfter applies. */
  @Get('run/:id')
  run(@Param('id') id: string) {
    return this.locks.run(`order:${id}`, () => ({ id }), { waitTimeout: 0 });
  }

  /** LockService.acquire: the module's retryAfter applies. */
  @Get('acquire/:id')
  async acquire(@Param('id') id: string) {
    const lock = await this.locks.acquire(`order:${id}`, { waitTimeout: 0 });
    await lock.release();
    return { id };
  }

  /** @Locked with a retryAfter of its own, a function of the conflict. */
  @Get('locked/:id')
  @Locked('order:<id>', {
    waitTimeout: 0,
    retryAfter: (conflict: LockNotAcquiredError) =>
      conflict.resources[0] === 'order:slow' ? 30_000 : 2_000,
  })
  locked(@Param('id') id: string) {
    return Promise.resolve({ id });
  }

  /** @Locked without its own: the module's. */
  @Get('plain/:id')
  @Locked('order:<id>', { waitTimeout: 0 })
  plain(@Param('id') id: string) {
    return Promise.resolve({ id });
  }
}

describe('Retry-After of a 409', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function listen(options: Partial<RedlockModuleOptions> = {}) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          clients: quorumUrls(),
          keyPrefix: prefix,
          ...options,
        }),
      ],
      controllers: [OrdersController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    const base = `http://127.0.0.1:${port}/orders`;
    /** The status and Retry-After of GET `path` while `order:<id>` is held with `ttl`. */
    return async (path: string, id: string, ttl = 20_000) => {
      const held = await app!.get(LockService).acquire(`order:${id}`, { ttl });
      try {
        const response = await fetch(`${base}/${path}/${id}`);
        return [response.status, response.headers.get('retry-after')];
      } finally {
        await held.release();
      }
    };
  }

  it('without the option: the holder’s remaining lease, in whole seconds', async () => {
    const busy = await listen();
    expect(await busy('run', '1', 20_000)).toEqual([409, '20']);
    expect(await busy('plain', '2', 7_000)).toEqual([409, '7']);
  });

  it('the module’s retryAfter (ms) for LockService.run and @Locked, rounded up to seconds', async () => {
    const busy = await listen({ retryAfter: 1_500 });
    expect(await busy('run', '3')).toEqual([409, '2']);
    expect(await busy('plain', '4')).toEqual([409, '2']);
  });

  it('a @Locked retryAfter of its own wins, as a function of the conflict', async () => {
    const busy = await listen({ retryAfter: 1_500 });
    expect(await busy('locked', 'slow')).toEqual([409, '30']);
    expect(await busy('locked', '5')).toEqual([409, '2']);
  });

  it('a module function that throws or returns no duration falls back to the error’s own hint', async () => {
    const busy = await listen({
      retryAfter: (conflict) => {
        if (conflict.resources[0] === 'order:throws') throw new Error('oops');
        return Number.NaN;
      },
    });
    expect(await busy('run', 'throws', 9_000)).toEqual([409, '9']);
    expect(await busy('run', 'nan', 9_000)).toEqual([409, '9']);
  });

  it('LockService.acquire records the module’s setting too, beside the unchanged error', async () => {
    const busy = await listen({ retryAfter: 4_000 });
    expect(await busy('acquire', '6')).toEqual([409, '4']);
    const locks = app!.get(LockService);
    const held = await locks.acquire('order:direct');
    const error = (await locks
      .acquire('order:direct', { waitTimeout: 0 })
      .catch((e: unknown) => e)) as LockNotAcquiredError;
    expect(error).toBeInstanceOf(LockNotAcquiredError);
    expect(error.retryAfter).toBeGreaterThan(9_000);
    await held.release();
  });

  it('refuses a retryAfter that is no duration nor function, naming the field', async () => {
    const build = Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          clients: quorumUrls(),
          retryAfter: -1,
        }),
      ],
    }).compile();
    await expect(build).rejects.toThrow(RedlockConfigError);
    await expect(build).rejects.toThrow(
      /Invalid retryAfter: must be a duration in ms/,
    );
  });
});
