import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Locked, RedlockConfigError } from 'nestjs-redlock';
import { createApp, type TestApp } from '../fixtures/create-app.js';
import {
  FactoryService,
  RequestScopedService,
  ScopedController,
  TransientService,
} from '../fixtures/scoped.fixture.js';
import { sleep, Tracker } from '../fixtures/tracker.js';

/* eslint-disable @typescript-eslint/require-await */
@Injectable()
class UnknownPlaceholderService {
  @Locked('sku:<sku>')
  async reserve(dto: { sku: string }): Promise<unknown> {
    return dto;
  }
}

@Injectable()
class BadOptionsService {
  @Locked('x:<0>', { ttl: -5, onNotAcquired: 'wait' as never })
  async run(id: string): Promise<string> {
    return id;
  }
}

@Injectable()
class TimingService {
  // Fine alone, but not with the module's ttl of 500 ms.
  @Locked('x:<0>', { nodeTimeout: 800 })
  async run(id: string): Promise<string> {
    return id;
  }
}

const bootError = (providers: unknown[], options = {}) =>
  createApp({ providers: providers as never[] }, options).then(
    async (t) => {
      await t.close();
      throw new Error('bootstrap succeeded');
    },
    (error: unknown) => error as Error,
  );

describe('@Locked at bootstrap', () => {
  it('fails start for a placeholder that names no parameter, naming class, method and placeholder', async () => {
    const error = await bootError([UnknownPlaceholderService]);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.message).toContain('UnknownPlaceholderService.reserve');
    expect(error.message).toContain('<sku>');
    expect(error.message).toContain('reserve(dto)');
  });

  it('fails start for invalid options, naming each field', async () => {
    const error = await bootError([BadOptionsService]);
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.message).toContain('BadOptionsService.run');
    expect(error.message).toMatch(/options\.ttl must be a finite number > 0/);
    expect(error.message).toMatch(
      /options\.onNotAcquired must be 'throw' or 'skip'/,
    );
  });

  it("fails start for timing that does not fit the module's", async () => {
    const error = await bootError([TimingService], { ttl: 500 });
    expect(error).toBeInstanceOf(RedlockConfigError);
    expect(error.message).toContain('TimingService.run');
    expect(error.message).toMatch(
      /nodeTimeout \(800 ms\) must be below ttl \(500 ms\)/,
    );
  });

  it('lists every problem when there are several', async () => {
    const error = await bootError([
      UnknownPlaceholderService,
      BadOptionsService,
    ]);
    expect(error.message).toMatch(/2 problems/);
  });
});

describe('@Locked on request-scoped, transient, factory and value providers', () => {
  let t: TestApp;
  let url: string;
  let tracker: Tracker;
  const value = new FactoryService();

  beforeAll(async () => {
    t = await createApp({
      providers: [
        Tracker,
        RequestScopedService,
        TransientService,
        { provide: 'FACTORY', useFactory: () => new FactoryService() },
        { provide: 'VALUE', useValue: value },
      ],
      controllers: [ScopedController],
    });
    tracker = t.app.get(Tracker);
    await t.app.listen(0, '127.0.0.1');
    url = await t.app.getUrl();
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['request', 'scoped'],
    ['transient', 'transient'],
  ])(
    'serialises concurrent requests through a %s-scoped provider',
    async (path, name) => {
      const before = tracker.intervals.length;
      const responses = await Promise.all(
        [1, 2, 3].map(() =>
          fetch(`${url}/scoped/${path}/r1`, { method: 'POST' }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual([201, 201, 201]);
      const runs = tracker.intervals
        .slice(before)
        .filter((i) => i.name === name);
      expect(runs).toHaveLength(3);
      expect(tracker.maxActive.get(`${name}:r1`)).toBe(1);
    },
  );

  it.each(['FACTORY', 'VALUE'])(
    'gives LockService to a %s provider (backfilled by the explorer)',
    async (token) => {
      const svc = t.app.get<FactoryService>(token);
      expect(Object.keys(svc)).toEqual(['calls']); // the injected symbol stays hidden
      const running = svc.work(token);
      await sleep(50);
      expect(await t.other.tryAcquire(`factory:${token}`)).toBeNull();
      expect(await running).toBe(`factory ${token}`);
    },
  );
});
