import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { Redlock, RedlockConfigError, RedlockModule } from 'nestjs-redlock';
import { RedisServer } from '../../scripts/redis-nodes.mjs';

// One server reached twice passes as two nodes unless the library checks:
// own servers, so the run ids compared are known.
describe('one Redis server listed twice', () => {
  let server: RedisServer;
  let other: RedisServer;
  beforeAll(async () => {
    [server, other] = await Promise.all([
      RedisServer.start(),
      RedisServer.start(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server.stop(), other.stop()]);
  });

  it('two databases of one server are refused at construction', () => {
    const build = () =>
      new Redlock({
        clients: [
          `redis://127.0.0.1:${server.port}/0`,
          `redis://127.0.0.1:${server.port}/1`,
          `redis://127.0.0.1:${other.port}`,
        ],
      });
    expect(build).toThrow(RedlockConfigError);
    expect(build).toThrow(/clients\[1\].*same Redis node as clients\[0\]/);
  });

  it('two names of one host: the core warns once, at connection, naming both and the run id', async () => {
    const warnings: string[] = [];
    const redlock = new Redlock({
      clients: [
        `redis://127.0.0.1:${server.port}`,
        `redis://localhost:${server.port}`,
        `redis://127.0.0.1:${other.port}`,
      ],
      logger: { warn: (m) => warnings.push(m) },
    });
    try {
      expect(await redlock.ready()).toBe(true);
      const runId = /run_id:(\w+)/.exec(
        await redlock.nodes[0].client.info('server'),
      )![1];
      const deadline = Date.now() + 2000;
      while (warnings.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(warnings).toEqual([
        `clients[1] (localhost:${server.port}) is the same Redis server as clients[0] (127.0.0.1:${server.port}), run_id ${runId}: Redlock needs N independent masters, and this one's vote counts twice; list each server once`,
      ]);
    } finally {
      await redlock.quit();
    }
  });

  it('independent servers: no warning', async () => {
    const warnings: string[] = [];
    const redlock = new Redlock({
      clients: [
        `redis://127.0.0.1:${server.port}`,
        `redis://127.0.0.1:${other.port}`,
      ],
      logger: { warn: (m) => warnings.push(m) },
    });
    await redlock.ready();
    await redlock.tryAcquire('same-server:none');
    await redlock.quit();
    // The even-number warning only.
    expect(warnings.filter((w) => w.includes('same Redis server'))).toEqual([]);
  });

  it('RedlockModule refuses to start, naming the field, and leaves no connection open', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          clients: [
            `redis://127.0.0.1:${other.port}`,
            `redis://localhost:${server.port}`,
            `redis://127.0.0.1:${server.port}`,
          ],
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const init = app.init();
    await expect(init).rejects.toThrow(RedlockConfigError);
    await expect(init).rejects.toThrow(
      /^Invalid clients\[2\]: \(127\.0\.0\.1:\d+\) is the same Redis server as clients\[1\] \(localhost:\d+\)/,
    );
    const admin = server.client();
    const clients = (await admin.client('LIST')) as string;
    await admin.quit();
    // Only the admin connection itself is left.
    expect(clients.trim().split('\n')).toHaveLength(1);
  });
});
