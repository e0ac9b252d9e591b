import { afterEach, describe, expect, it } from '@jest/globals';
import {
  Injectable,
  Module,
  type DynamicModule,
  type LoggerService,
} from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  getLockServiceToken,
  LockLostError,
  LockService,
  RedlockModule,
  type RedlockModuleOptions,
  type RedlockOptionsFactory,
} from 'nestjs-redlock';
import { freePort } from '../../scripts/redis-nodes.mjs';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

// Module options that the docs promise and no other spec exercised:
// forRootAsync({ useExisting }), and where warnings go: a Nest Logger with
// the context `Redlock` (`Redlock:<name>` for a named lock set) unless the
// `logger` option is given (docs/configuration.md "Options",
// docs/observability.md "Logs", docs/locked.md "Lost locks").

/** An options factory that counts its calls, exported by its own module. */
@Injectable()
class LockConfig implements RedlockOptionsFactory {
  readonly keyPrefix = uniquePrefix('existing');
  calls = 0;
  createRedlockOptions(): RedlockModuleOptions {
    this.calls++;
    return { clients: quorumUrls(), keyPrefix: this.keyPrefix, ttl: 4000 };
  }
}

@Module({ providers: [LockConfig], exports: [LockConfig] })
class LockConfigModule {}

type Line = {
  level: 'log' | 'warn' | 'error';
  message: string;
  context?: string;
};

/** A Nest LoggerService that keeps what it is given. */
function recordingLogger(): LoggerService & { lines: Line[] } {
  const lines: Line[] = [];
  const keep =
    (level: Line['level']) =>
    (message: unknown, ...params: unknown[]) =>
      lines.push({
        level,
        message: String(message),
        context: params.at(-1) as string | undefined,
      });
  return { lines, log: keep('log'), warn: keep('warn'), error: keep('error') };
}

describe('RedlockModule options', () => {
  let moduleRef: TestingModule | undefined;

  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  /** Compiles and initialises `imports` with `logger` as Nest's logger. */
  const boot = async (imports: DynamicModule[], logger?: LoggerService) => {
    const builder = Test.createTestingModule({ imports });
    if (logger) builder.setLogger(logger);
    moduleRef = await builder.compile();
    await moduleRef.init();
    return moduleRef;
  };

  describe('forRootAsync({ useExisting })', () => {
    it('builds the options with the instance the imported module exports, not a new one', async () => {
      const ref = await boot([
        RedlockModule.forRootAsync({
          imports: [LockConfigModule],
          useExisting: LockConfig,
        }),
      ]);
      const config = ref.get(LockConfig);
      expect(config.calls).toBe(1);
      const admin = inspect(quorumUrls());
      try {
        const lock = await ref.get(LockService).acquire('existing');
        // The factory's keyPrefix and ttl are the ones in force.
        const key = `${config.keyPrefix}existing`;
        const values = await Promise.all(admin.map((c) => c.get(key)));
        expect(
          values.filter((v) => v === lock.value).length,
        ).toBeGreaterThanOrEqual(3);
        for (const pttl of await Promise.all(admin.map((c) => c.pttl(key))))
          expect(pttl).toBeLessThanOrEqual(4000);
        await lock.release();
      } finally {
        await closeAll(admin);
      }
    });

    it('works for a named lock set too', async () => {
      const ref = await boot([
        RedlockModule.forRootAsync({
          name: 'payments',
          imports: [LockConfigModule],
          useExisting: LockConfig,
        }),
      ]);
      const config = ref.get(LockConfig);
      expect(config.calls).toBe(1);
      const payments = ref.get<LockService>(getLockServiceToken('payments'));
      expect(payments.redlock.keyPrefix).toBe(config.keyPrefix);
      const lock = await payments.acquire('named');
      expect(lock.isHeld).toBe(true);
      await lock.release();
    });
  });

  describe('the default logger', () => {
    // Two nodes: the construction warns of an even number of nodes.
    const twoNodes = () => quorumUrls().slice(0, 2);
    const EVEN = /even number of nodes \(2\)/;

    it("logs to Nest's Logger with the context Redlock: at construction, and when a run() loses its lock to maxHold", async () => {
      const nest = recordingLogger();
      const ref = await boot(
        [
          RedlockModule.forRoot({
            clients: twoNodes(),
            keyPrefix: uniquePrefix('logger'),
          }),
        ],
        nest,
      );
      expect(nest.lines).toContainEqual({
        level: 'warn',
        message: expect.stringMatching(EVEN),
        context: 'Redlock',
      });
      const lost = await ref
        .get(LockService)
        .run(
          'bounded',
          (lock) =>
            new Promise((resolve) =>
              lock.signal.addEventListener('abort', resolve, { once: true }),
            ),
          { ttl: 1000, maxHold: 100 },
        )
        .catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(LockLostError);
      expect(nest.lines).toContainEqual({
        level: 'warn',
        message: expect.stringMatching(/"bounded".*maxHold \(100 ms\)/),
        context: 'Redlock',
      });
    });

    it('a named lock set logs with the context Redlock:<name>', async () => {
      const nest = recordingLogger();
      await boot(
        [RedlockModule.forRoot({ name: 'payments', clients: twoNodes() })],
        nest,
      );
      expect(nest.lines).toContainEqual({
        level: 'warn',
        message: expect.stringMatching(EVEN),
        context: 'Redlock:payments',
      });
    });

    it('the logger option takes the warnings instead of Nest', async () => {
      const nest = recordingLogger();
      const mine: string[] = [];
      const ref = await boot(
        [
          RedlockModule.forRoot({
            clients: twoNodes(),
            keyPrefix: uniquePrefix('own-logger'),
            logger: { warn: (message) => mine.push(message) },
          }),
        ],
        nest,
      );
      await ref
        .get(LockService)
        .run(
          'mine',
          (lock) =>
            new Promise((resolve) =>
              lock.signal.addEventListener('abort', resolve, { once: true }),
            ),
          { ttl: 1000, maxHold: 100, onLockLost: 'ignore' },
        );
      expect(mine).toEqual([
        expect.stringMatching(EVEN),
        expect.stringMatching(/"mine".*maxHold \(100 ms\)/),
      ]);
      expect(
        nest.lines.filter((l) => l.context?.startsWith('Redlock')),
      ).toEqual([]);
    });

    // The module's own warning at init goes through the set's logger too.
    describe('the start-up warning (fewer than a quorum reachable)', () => {
      // Nothing listens there: init waits its 5 s for a quorum, then warns.
      const deadNode = async () => `redis://127.0.0.1:${await freePort()}`;
      const startWarning = /quorum/;

      it('of a named lock set has the context Redlock:<name>', async () => {
        const nest = recordingLogger();
        await boot(
          [
            RedlockModule.forRoot({
              name: 'payments',
              clients: [await deadNode()],
            }),
          ],
          nest,
        );
        expect(
          nest.lines.filter((l) => l.context?.startsWith('Redlock')),
        ).toEqual([
          {
            level: 'warn',
            message: expect.stringMatching(startWarning),
            context: 'Redlock:payments',
          },
        ]);
      }, 15_000);

      it('goes to the logger option when one is given', async () => {
        const nest = recordingLogger();
        const mine: string[] = [];
        await boot(
          [
            RedlockModule.forRoot({
              clients: [await deadNode()],
              logger: { warn: (message) => mine.push(message) },
            }),
          ],
          nest,
        );
        expect(mine).toEqual([expect.stringMatching(startWarning)]);
        expect(
          nest.lines.filter((l) => l.context?.startsWith('Redlock')),
        ).toEqual([]);
      }, 15_000);
    });
  });
});
