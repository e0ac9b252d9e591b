import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockModule } from 'nestjs-redlock';
import { HealthModule } from '../../sample/src/health/health.module.js';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';

// The sample's terminus indicator (README, "Health checks") while nodes
// stop: own five servers.
describe('GET /health (the sample indicator) as nodes stop', () => {
  let servers: RedisServer[];
  let app: INestApplication;
  let url: string;
  const health = async () => {
    const res = await fetch(`${url}/health`, {
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeAll(async () => {
    servers = await startServers(5);
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          clients: servers.map((s) => s.url),
          logger: { warn: () => undefined },
        }),
        HealthModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('up with every node, degraded (200) with a quorum, down (503) below it, naming the nodes that failed', async () => {
    const all = await health();
    expect(all.status).toBe(200);
    expect(all.body.info.locks).toMatchObject({ status: 'up', up: 5 });

    await servers[4].kill();
    const four = await health();
    expect(four.status).toBe(200);
    expect(four.body.info.locks).toMatchObject({
      status: 'degraded',
      up: 4,
      quorum: 3,
    });
    expect(four.body.info.locks.nodes[4]).toMatchObject({
      node: `127.0.0.1:${servers[4].port}`,
      up: false,
    });

    await servers[2].kill();
    await servers[3].kill();
    const two = await health();
    expect(two.status).toBe(503);
    expect(two.body.error.locks).toMatchObject({
      status: 'down',
      up: 2,
      quorum: 3,
    });
  });
});
