import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedlockModule } from 'nestjs-redlock';
import { HealthModule } from '../../sample/src/health/health.module.js';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';

// The sample's terminus indicator (docs/observability.md, "Health checks") while nodes
// stop: own five servers.
describe('GET /health (the sample indicator) as nodes stop', () => {
  let servers: RedisServer[];
  let app: INestApplication;
  let url: string;
  /** GET /health: its HTTP status, and the locks indicator's details. */
  const expectHealth = async (
    http: number,
    locks: { status: string; up: number },
  ) => {
    const res = await fetch(`${url}/health`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(http);
    const body = (await res.json()) as any;
    expect(body.details.locks).toMatchObject({ ...locks, quorum: 3 });
    return body.details.locks as { nodes: unknown[] };
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
    await expectHealth(200, { status: 'up', up: 5 });
    await servers[4].kill();
    const four = await expectHealth(200, { status: 'degraded', up: 4 });
    expect(four.nodes[4]).toMatchObject({
      node: `127.0.0.1:${servers[4].port}`,
      up: false,
    });
    await servers[2].kill();
    await servers[3].kill();
    await expectHealth(503, { status: 'down', up: 2 });
  });
});
