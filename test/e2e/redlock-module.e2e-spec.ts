import { afterEach, describe, expect, it } from '@jest/globals';
import {
  Catch,
  Controller,
  Get,
  Injectable,
  Module,
  NotFoundException,
  Param,
  type ArgumentsHost,
  type ExceptionFilter,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  LOCK_SERVICE,
  Locked,
  LockNotAcquiredError,
  type LockFailureReason,
  LockService,
  RedlockModule,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from 'nestjs-redlock';
import {
  closeAll,
  inspect,
  quorumUrls,
  singleUrl,
  uniquePrefix,
} from '../utils/nodes.js';
import { freePort } from '../../scripts/redis-nodes.mjs';

const prefix = uniquePrefix('module');

@Injectable()
class ConfigStub {
  readonly urls = quorumUrls();
}

@Module({ providers: [ConfigStub], exports: [ConfigStub] })
class ConfigStubModule {}

@Injectable()
class OptionsFactory implements RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions {
    return { clients: quorumUrls(), keyPrefix: prefix, ttl: 3000 };
  }
}

@Injectable()
class FeatureService {
  constructor(readonly locks: LockService) {}
}

/** A feature module that does not import RedlockModule: the module is global. */
@Module({ providers: [FeatureService] })
class FeatureModule {}

@Controller('stock')
class StockController {
  constructor(private readonly locks: LockService) {}

  @Get(':sku')
  async read(@Param('sku') sku: string) {
    return this.locks.run(`sku:${sku}`, () => ({ sku, ok: true }), {
      waitTimeout: 0,
    });
  }

  @Get('missing/:sku')
  missing(@Param('sku') sku: string) {
    throw new NotFoundException(`no ${sku}`);
  }
}

/** A provider built after the module's `Redlock`, which fails. */
@Injectable()
class BrokenService {
  constructor(locks: LockService) {
    throw new Error(`BrokenService cannot start (${typeof locks})`);
  }
}

/** Fails `app.init()`: the explorer finds no parameter `sku`. */
@Injectable()
class BadPlaceholderService {
  @Locked('sku:<sku>')
  reserve(dto: { sku: string }): Promise<{ sku: string }> {
    return Promise.resolve(dto);
  }
}

/** Options for clients on the quorum nodes whose connections are named `name`. */
function named(name: string) {
  return quorumUrls().map((url) => {
    const { hostname, port } = new URL(url);
    return { host: hostname, port: Number(port), connectionName: name };
  });
}

/** Connections named `name` open on the quorum nodes. */
async function connectionsNamed(name: string): Promise<number> {
  const probes = inspect(quorumUrls());
  try {
    const lists = await Promise.all(
      probes.map((p) => p.client('LIST') as Promise<string>),
    );
    return lists
      .join('\n')
      .split('\n')
      .filter((line) => line.includes(` name=${name} `)).length;
  } finally {
    await closeAll(probes);
  }
}

@Catch()
class CatchAllFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost) {
    host
      .switchToHttp()
      .getResponse()
      .status(418)
      .json({ custom: true, name: (exception as Error).name });
  }
}

describe('RedlockModule', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('forRoot: provides LockService globally and closes the clients it created on shutdown', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ clients: quorumUrls(), keyPrefix: prefix }),
        FeatureModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const feature = app.get(FeatureService);
    expect(app.get(LOCK_SERVICE)).toBe(feature.locks);
    const lock = await feature.locks.acquire('forRoot');
    expect(lock.isHeld).toBe(true);
    await lock.release();
    const clients = feature.locks.redlock.nodes.map((n) => n.client);
    await app.close();
    app = undefined;
    // Closed, not only told to QUIT, once close() resolved.
    expect(clients.map((c) => c.status)).toEqual(clients.map(() => 'end'));
  });

  it('leaves client instances passed in open on shutdown', async () => {
    const own = [new Redis(singleUrl())];
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot({ clients: own, keyPrefix: prefix })],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await app.get(LockService).run('borrowed', () => undefined);
    await app.close();
    app = undefined;
    expect(await own[0].ping()).toBe('PONG');
    await closeAll(own);
  });

  it('forRootAsync with useFactory and inject', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRootAsync({
          imports: [ConfigStubModule],
          inject: [ConfigStub],
          useFactory: (config: ConfigStub) => ({
            clients: config.urls,
            keyPrefix: prefix,
            ttl: 4000,
          }),
        }),
        FeatureModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const lock = await app.get(FeatureService).locks.acquire('async');
    expect(lock.ttl).toBe(4000);
    await lock.release();
  });

  it('forRootAsync with useClass', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useClass: OptionsFactory })],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const lock = await app.get(LockService).acquire('useClass');
    expect(lock.ttl).toBe(3000);
    await lock.release();
  });

  it('isGlobal: false keeps LockService out of modules that do not import it', async () => {
    const build = Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ clients: quorumUrls(), isGlobal: false }),
        FeatureModule,
      ],
    }).compile();
    await expect(build).rejects.toThrow(/FeatureService/);
  });

  describe('connections', () => {
    const name = () => uniquePrefix('boot').replace(/\W/g, '');

    it('opens them while the app initialises, and has a quorum connected when init() resolves', async () => {
      const connection = name();
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ clients: named(connection) })],
      }).compile();
      expect(await connectionsNamed(connection)).toBe(0);
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      const { redlock } = app.get(LockService);
      const ready = redlock.nodes.filter((n) => n.client.status === 'ready');
      expect(ready.length).toBeGreaterThanOrEqual(redlock.quorum);
      expect(await connectionsNamed(connection)).toBeGreaterThanOrEqual(
        redlock.quorum,
      );
    });

    it('a bootstrap that fails in a provider built after the module leaves none open', async () => {
      const connection = name();
      const build = Test.createTestingModule({
        imports: [RedlockModule.forRoot({ clients: named(connection) })],
        providers: [BrokenService],
      }).compile();
      await expect(build).rejects.toThrow(/BrokenService cannot start/);
      // Nothing can close them: the app was never returned.
      await new Promise((r) => setTimeout(r, 100));
      expect(await connectionsNamed(connection)).toBe(0);
    });

    it("an init that fails on the module's own checks (@Locked) leaves none open", async () => {
      const connection = name();
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ clients: named(connection) })],
        providers: [BadPlaceholderService],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await expect(app.init()).rejects.toThrow(/BadPlaceholderService/);
      // An app whose init() failed is often not closed.
      await new Promise((r) => setTimeout(r, 100));
      expect(await connectionsNamed(connection)).toBe(0);
    });
  });

  describe('nodes not reachable at start', () => {
    /** Boots an app on `clients` and returns the module's warnings. */
    async function bootWarnings(clients: string[]): Promise<string[]> {
      const warnings: string[] = [];
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ clients })],
      }).compile();
      app = moduleRef.createNestApplication({
        logger: {
          log: () => undefined,
          error: () => undefined,
          warn: (message: unknown) => warnings.push(String(message)),
        },
      });
      await app.init();
      return warnings;
    }

    it('are logged once, by name and cause, while a quorum is up', async () => {
      const refused = `redis://127.0.0.1:${await freePort()}`;
      const warnings = await bootWarnings([
        ...quorumUrls().slice(0, 2),
        refused,
      ]);
      const port = new URL(refused).port;
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `not reachable at start: 127\\.0\\.0\\.1:${port} \\(connect ECONNREFUSED`,
          ),
        ),
      ]);
      // A lock still works on the two others, and says nothing more.
      await app!.get(LockService).run('boot:ok', () => Promise.resolve());
      expect(warnings).toHaveLength(1);
    });

    it('without a quorum, the warning names every missing node and its cause', async () => {
      const refused = [
        `redis://127.0.0.1:${await freePort()}`,
        `redis://127.0.0.1:${await freePort()}`,
      ];
      const warnings = await bootWarnings([quorumUrls()[0], ...refused]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/Fewer than a quorum \(2 of 3\)/);
      for (const url of refused)
        expect(warnings[0]).toContain(
          `127.0.0.1:${new URL(url).port} (connect ECONNREFUSED`,
        );
    });
  });

  it('rejects bad options at bootstrap, naming the field', async () => {
    const build = Test.createTestingModule({
      imports: [RedlockModule.forRoot({ clients: quorumUrls(), ttl: -1 })],
    }).compile();
    await expect(build).rejects.toMatchObject({
      name: 'RedlockConfigError',
      field: 'ttl',
    });
  });

  it('propagates an error from user code in run() unchanged and releases the lock', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({ clients: quorumUrls(), keyPrefix: prefix }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const locks = app.get(LockService);
    const thrown = new TypeError('from user code');
    await expect(
      locks.run('throws', () => Promise.reject(thrown)),
    ).rejects.toBe(thrown);
    const again = await locks.tryAcquire('throws');
    expect(again).not.toBeNull();
    await again!.release();
  });

  describe('over HTTP', () => {
    async function listen(withCatchAll = false) {
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ clients: quorumUrls(), keyPrefix: prefix }),
        ],
        controllers: [StockController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      if (withCatchAll) app.useGlobalFilters(new CatchAllFilter());
      await app.listen(0, '127.0.0.1');
      const { port } = app.getHttpServer().address() as { port: number };
      return `http://127.0.0.1:${port}`;
    }

    it('answers 409 with Retry-After and a JSON body naming the resources when the lock is held', async () => {
      const base = await listen();
      const held = await app!.get(LockService).acquire('sku:A1', { ttl: 5000 });
      const response = await fetch(`${base}/stock/A1`);
      expect(response.status).toBe(409);
      expect(
        Number(response.headers.get('retry-after')),
      ).toBeGreaterThanOrEqual(1);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        statusCode: 409,
        error: 'Conflict',
        resources: ['sku:A1'],
        reason: 'busy',
      });
      await held.release();
      const ok = await fetch(`${base}/stock/A1`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ sku: 'A1', ok: true });
    });

    it("keeps the app's own filters working, and a catch-all filter of the app's own sees the lock error unchanged", async () => {
      const base = await listen(true);
      const response = await fetch(`${base}/stock/missing/B2`);
      expect(response.status).toBe(418);
      expect(await response.json()).toEqual({
        custom: true,
        name: 'NotFoundException',
      });
      // Filters the app registers itself come first (Nest's order), so a
      // catch-all gets the LockNotAcquiredError as it is, to map it as it likes.
      const held = await app!.get(LockService).acquire('sku:B2');
      const busy = await fetch(`${base}/stock/B2`);
      expect(busy.status).toBe(418);
      expect(await busy.json()).toEqual({
        custom: true,
        name: 'LockNotAcquiredError',
      });
      await held.release();
    });
  });

  it('LockNotAcquiredError carries statusCode 409 (held elsewhere) or 503 (lock service down) for other transports to map', () => {
    const status = (reason: LockFailureReason) =>
      new LockNotAcquiredError(['x'], 1, reason, [], 100).statusCode;
    expect(status('busy')).toBe(409);
    expect(status('expired')).toBe(409);
    expect(status('unreachable')).toBe(503);
    expect(status('closed')).toBe(503);
    const error = new LockNotAcquiredError(['x'], 1, 'unreachable', [], 100);
    expect(error.name).toBe('LockNotAcquiredError');
    // Serialising transports carry own fields only.
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({
      statusCode: 503,
      reason: 'unreachable',
    });
  });
});
