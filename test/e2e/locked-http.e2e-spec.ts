import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import { OrdersController, OrdersService } from '../fixtures/orders.fixture.js';
import { sleep, Tracker } from '../fixtures/tracker.js';
import { ownNodes } from '../utils/own-nodes.js';

describe('@Locked on controllers over real HTTP', () => {
  let t: TestApp;
  let url: string;

  beforeAll(async () => {
    t = await createApp({
      providers: [Tracker, OrdersService],
      controllers: [OrdersController],
    });
    await t.app.listen(0, '127.0.0.1');
    url = await t.app.getUrl();
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['above', 201],
    ['below', 202],
  ])(
    'keeps the route and its @HttpCode with @Locked %s @Post()',
    async (where, status) => {
      const response = await fetch(`${url}/orders/${where}/5`, {
        method: 'POST',
      });
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ id: '5', held: true });
    },
  );

  it('keeps metadata of decorators written above and below @Locked', () => {
    const proto = OrdersController.prototype;
    expect(Reflect.getMetadata('tag', proto.above)).toBe('above');
    expect(Reflect.getMetadata('tag', proto.below)).toBe('below');
    expect(proto.above.name).toBe('above');
  });

  it('keeps the status of an HttpException thrown by the method (404)', async () => {
    const response = await fetch(`${url}/orders/missing/3`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { message: string }).message).toBe(
      'order 3 not found',
    );
  });

  it('answers 409 with the resources and Retry-After while the lock is held elsewhere', async () => {
    const held = await t.other.acquire('pay:7', { ttl: 3000 });
    try {
      const response = await fetch(`${url}/orders/pay/7`, { method: 'POST' });
      expect(response.status).toBe(409);
      const body = (await response.json()) as {
        resources: string[];
        statusCode: number;
      };
      expect(body.statusCode).toBe(409);
      expect(body.resources).toEqual(['pay:7']);
      const retryAfter = response.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    } finally {
      await held.release();
    }
    const after = await fetch(`${url}/orders/pay/7`, { method: 'POST' });
    expect(after.status).toBe(201);
    expect(await after.text()).toBe('paid 7');
  });

  it('holds the lock of an Observable handler until the response completes', async () => {
    const response = fetch(`${url}/orders/stream/s1`).then((r) => r.text());
    await sleep(200);
    expect(await t.other.tryAcquire('stream:s1')).toBeNull();
    expect(await response).toBe('s1:3'); // Nest answers the last value
    const next = await t.other.acquire('stream:s1', { waitTimeout: 1000 });
    expect(next.isHeld).toBe(true);
    await next.release();
  });

  it("an Observable handler skipped with onNotAcquired: 'skip' answers 200 with no body, as a Promise one does", async () => {
    const held = await t.other.acquire('stream:k1');
    const skipped = await fetch(`${url}/orders/stream-or-skip/k1`);
    expect(skipped.status).toBe(200);
    expect(await skipped.text()).toBe('');
    await held.release();
    const served = await fetch(`${url}/orders/stream-or-skip/k1`);
    expect(await served.text()).toBe('k1:now');
  });

  it('LockInterceptor + @LockKey locks from the request and answers 409 to a concurrent request', async () => {
    const first = fetch(`${url}/orders/intercepted/i1`, { method: 'POST' });
    await sleep(120);
    const second = await fetch(`${url}/orders/intercepted/i1`, {
      method: 'POST',
    });
    expect(second.status).toBe(409);
    const ok = await first;
    expect(ok.status).toBe(201);
    expect(await ok.text()).toBe('ok i1 ic:i1');
    const next = await t.other.acquire('ic:i1', { waitTimeout: 1000 });
    await next.release();
  });

  it('LockInterceptor answers 400 naming the placeholder when the request lacks the key field', async () => {
    const post = (body: unknown) =>
      fetch(`${url}/orders/intercepted-body`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const body of [{}, { sku: '' }, { sku: { nested: 1 } }]) {
      const response = await post(body);
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { message: string };
      expect(answer.message).toMatch(
        /^Cannot build the lock key: <body\.sku> /,
      );
      // The class and method stay in the server's logs.
      expect(answer.message).not.toMatch(/OrdersController/);
    }
    const ok = await post({ sku: 'k9' });
    expect(ok.status).toBe(201);
    expect(await ok.text()).toBe('ok k9 icb:k9');
  });
});

describe('@Locked on controllers when the lock service is down', () => {
  const { servers } = ownNodes(3);

  it('answers 503 with the reason and Retry-After while a quorum of nodes does not answer, 201 once they do', async () => {
    const t = await createApp(
      { providers: [Tracker, OrdersService], controllers: [OrdersController] },
      { clients: servers.map((s) => s.url) },
    );
    try {
      await t.app.listen(0, '127.0.0.1');
      const url = await t.app.getUrl();
      servers[1].freeze();
      servers[2].freeze();
      let response: Response;
      try {
        response = await fetch(`${url}/orders/pay/8`, { method: 'POST' });
      } finally {
        servers[1].thaw();
        servers[2].thaw();
      }
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({
        statusCode: 503,
        error: 'Service Unavailable',
        resources: ['pay:8'],
        reason: 'unreachable',
      });
      expect(
        Number(response.headers.get('retry-after')),
      ).toBeGreaterThanOrEqual(1);
      const after = await fetch(`${url}/orders/pay/8`, { method: 'POST' });
      expect(after.status).toBe(201);
    } finally {
      await t.close();
    }
  });
});
