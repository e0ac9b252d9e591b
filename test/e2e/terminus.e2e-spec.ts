import { Controller, Get, Query } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  HealthCheck,
  HealthCheckService,
  TerminusModule,
} from '@nestjs/terminus';
import { Redlock, RedlockModule } from 'nestjs-redlock';
import { RedlockHealthIndicator } from 'nestjs-redlock/terminus';
import { quorumUrls, singleUrl } from '../utils/nodes.js';

// The packaged indicator's details (the sample's /health shows up,
// degraded and down as nodes stop: health.e2e-spec.ts).
@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(@Query('slowMs') slowMs?: string) {
    return this.health.check([
      () => this.locks.isHealthy('locks', { slowMs: Number(slowMs ?? 100) }),
      () => this.locks.isHealthy('payments', { lockSet: 'payments' }),
    ]);
  }
}

@Controller('health')
class LocksOnlyController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}

describe('RedlockHealthIndicator (nestjs-redlock/terminus)', () => {
  it('names quarantined and slow nodes, and checks a named lock set', async () => {
    const quiet = { warn: () => undefined };
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule,
        // The shared servers have been up for seconds, not an hour.
        RedlockModule.forRoot({
          clients: quorumUrls(),
          restartQuarantine: 3_600_000,
          logger: quiet,
        }),
        RedlockModule.forRoot({
          name: 'payments',
          clients: [singleUrl()],
          logger: quiet,
        }),
      ],
      controllers: [HealthController],
      providers: [RedlockHealthIndicator],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const res = await fetch(`${url}/health?slowMs=-1`);
      // Every quorum node is quarantined: no lock can be taken.
      expect(res.status).toBe(503);
      const body = (await res.json()) as any;
      const names = quorumUrls().map((u) => new URL(u).host);
      expect(body.details.locks).toMatchObject({
        status: 'down',
        up: 5,
        quorum: 3,
        quarantined: names,
        slow: names,
      });
      expect(body.details.payments).toMatchObject({
        status: 'up',
        up: 1,
        quorum: 1,
        quarantined: [],
        slow: [],
        nodes: [{ node: new URL(singleUrl()).host, up: true }],
      });
    } finally {
      await app.close();
    }
  });

  it('names the nodes the clock monitor holds out, and reads degraded while a quorum counts', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule,
        RedlockModule.forRoot({
          clients: quorumUrls(),
          clockMonitor: { interval: 20 },
          logger: { warn: () => undefined },
        }),
      ],
      controllers: [LocksOnlyController],
      providers: [RedlockHealthIndicator],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const redlock = app.get(Redlock);
      const monitor = redlock.standing.clockMonitor;
      // Node 1 read twice for real, so a made-up reading has one before it.
      for (let i = 0; (monitor.detector(1)?.samples ?? 0) < 2 && i < 300; i++)
        await new Promise((r) => setTimeout(r, 10));
      // Then a reading 10 s ahead of this host's clock: the node jumped.
      const now = redlock.clock.now();
      monitor.record(1, {
        sentAt: now,
        answeredAt: now,
        nodeTime: Date.now() + 10_000,
      });
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const res = await fetch(`${url}/health`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.details.locks).toMatchObject({
        status: 'degraded',
        up: 5,
        clockSuspect: [new URL(quorumUrls()[1]).host],
        quarantined: [],
      });
    } finally {
      await app.close();
    }
  });
});
