import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import { AppModule } from '../src/app.module';

/**
 * The app as a user tests it (CommonJS, jest's default mode), against the
 * real Redis nodes whose URLs the consumer check passes in REDIS_URLS. Two
 * instances of the app stand for two replicas.
 */
const urls = (process.env.REDIS_URLS ?? '').split(',').filter(Boolean);
const run = `${process.pid}-${Date.now()}`;

async function boot(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule],
  }).compile();
  const app = moduleRef.createNestApplication();
  await app.listen(0, '127.0.0.1');
  return app;
}

describe('orders (CommonJS, Nest 11, ioredis 5, jest 29)', () => {
  let a: INestApplication;
  let b: INestApplication;
  let raw: Redis[] = [];

  beforeAll(async () => {
    expect(urls.length).toBeGreaterThanOrEqual(3);
    [a, b] = await Promise.all([boot(), boot()]);
    raw = urls.map((url) => new Redis(url));
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all(raw.map((client) => client.quit()));
  });

  it('loses updates without the lock (the control)', async () => {
    const id = `unlocked-${run}`;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        request(a.getHttpServer())
          .post(`/orders/${id}/increment-unlocked`)
          .expect(201),
      ),
    );
    const { body } = await request(a.getHttpServer()).get(`/orders/${id}`);
    expect(body.count).toBeLessThan(10);
  });

  it('serialises concurrent increments of one order across two instances', async () => {
    const id = `locked-${run}`;
    const n = 20;
    const responses = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        request((i % 2 ? a : b).getHttpServer()).post(
          `/orders/${id}/increment`,
        ),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(n).fill(201));
    const counts = responses.map((r) => r.body.count as number);
    expect(counts.sort((x, y) => x - y)).toEqual(
      Array.from({ length: n }, (_, i) => i + 1),
    );
    const snapshot = await request(b.getHttpServer()).get(
      `/orders/${id}/snapshot`,
    );
    expect(snapshot.status).toBe(200);
    expect(snapshot.body).toEqual({ id, count: n });
    const { body } = await request(a.getHttpServer()).get(`/orders/${id}`);
    expect(body).toEqual({
      id,
      count: n,
      locked: false,
      key: `lock:order:${id}`,
    });
  });

  it('answers 409 with Retry-After while another process holds the lock', async () => {
    const id = `held-${run}`;
    const key = `lock:order:${id}`;
    // Another process's lock: the documented key, set on every node.
    const set = await Promise.all(
      raw.map((client) =>
        client.set(key, 'another-process', 'PX', 10_000, 'NX'),
      ),
    );
    expect(set).toEqual(urls.map(() => 'OK'));
    const shown = await request(a.getHttpServer()).get(`/orders/${id}`);
    expect(shown.body).toMatchObject({ locked: true, key });

    const started = Date.now();
    const [refused, snapshot] = await Promise.all([
      request(a.getHttpServer()).post(`/orders/${id}/increment`),
      request(b.getHttpServer()).get(`/orders/${id}/snapshot`),
    ]);
    expect(refused.status).toBe(409);
    expect(snapshot.status).toBe(409);
    // waitTimeout came from ConfigService (3 s by default in the app).
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    expect(refused.body).toMatchObject({
      statusCode: 409,
      resources: [`order:${id}`],
      reason: 'busy',
    });

    await Promise.all(raw.map((client) => client.del(key)));
    const accepted = await request(a.getHttpServer())
      .post(`/orders/${id}/increment`)
      .expect(201);
    expect(accepted.body.count).toBe(1);
  });
});
