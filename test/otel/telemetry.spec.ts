import {
  Controller,
  Injectable,
  Param,
  Post,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  MeterProvider,
  MetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { Locked, LockService, RedlockModule } from 'nestjs-redlock';
import { enableRedlockTelemetry } from 'nestjs-redlock/otel';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeAll, inspect, quorumUrls, uniquePrefix } from '../utils/nodes.js';

/** A reader a test collects from when it wants. */
class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

@Injectable()
class StockService {
  @Locked('sku:<sku>')
  async reserve(sku: string): Promise<string> {
    await sleep(5);
    return sku;
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly stock: StockService) {}

  @Post(':sku')
  place(@Param('sku') sku: string) {
    return this.stock.reserve(sku);
  }
}

describe('OpenTelemetry (nestjs-redlock/otel)', () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const admin = inspect(quorumUrls());
  const prefix = uniquePrefix('otel');
  let disable: () => void;
  let app: INestApplication;

  /** The metric `name` as last collected. */
  async function metric(name: string): Promise<MetricData | undefined> {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
  }

  beforeAll(async () => {
    context.setGlobalContextManager(contextManager);
    disable = enableRedlockTelemetry({ tracerProvider, meterProvider });
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedlockModule.forRoot({
          clients: quorumUrls(),
          keyPrefix: prefix,
          logger: { warn: () => undefined },
        }),
      ],
      providers: [StockService],
      controllers: [OrdersController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    // Each request runs in a span of its own, as an HTTP instrumentation would.
    const tracer = tracerProvider.getTracer('test');
    app.use(
      (
        _req: unknown,
        res: { on(e: string, f: () => void): void },
        next: () => void,
      ) => {
        const span = tracer.startSpan('request');
        res.on('finish', () => span.end());
        context.with(trace.setSpan(context.active(), span), next);
      },
    );
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    disable();
    await app.close();
    await closeAll(admin);
    context.disable();
  });
  beforeEach(() => exporter.reset());

  it('a locked HTTP request gives a span tree: request -> redlock.acquire, redlock.release', async () => {
    const url = await app.getUrl();
    const response = await fetch(`${url}/orders/A1`, { method: 'POST' });
    expect(response.status).toBe(201);
    await sleep(20);
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'request')!;
    const acquire = spans.find((s) => s.name === 'redlock.acquire')!;
    const release = spans.find((s) => s.name === 'redlock.release')!;
    for (const child of [acquire, release]) {
      expect(child.spanContext().traceId).toBe(request.spanContext().traceId);
      expect(child.parentSpanContext?.spanId).toBe(
        request.spanContext().spanId,
      );
    }
    expect(acquire.attributes).toMatchObject({
      'db.system.name': 'redis',
      'redlock.resources': ['sku:A1'],
      'redlock.outcome': 'acquired',
      'redlock.attempts': 1,
    });
    expect(acquire.attributes['redlock.value_hash']).toHaveLength(16);
    expect(release.attributes).toMatchObject({
      'redlock.released': true,
      'redlock.value_hash': acquire.attributes['redlock.value_hash'],
    });
  });

  it('a contended burst records one wait per acquisition, and the outcomes', async () => {
    const before = await metric('redlock.wait.duration');
    const counted = (m: MetricData | undefined) =>
      (m?.dataPoints[0]?.value as { count?: number } | undefined)?.count ?? 0;
    const start = counted(before);
    const stock = app.get(StockService);
    await Promise.all(Array.from({ length: 10 }, () => stock.reserve('B2')));
    const waits = await metric('redlock.wait.duration');
    expect(counted(waits) - start).toBe(10);
    const acquireCalls = (await metric(
      'redlock.acquire.duration',
    ))!.dataPoints.find((p) => p.attributes['redlock.outcome'] === 'acquired');
    expect(
      counted({ dataPoints: [acquireCalls] } as MetricData),
    ).toBeGreaterThanOrEqual(11);
    expect(
      counted(await metric('redlock.hold.duration')),
    ).toBeGreaterThanOrEqual(11);
    const acquisitions = await metric('redlock.acquisitions');
    const acquired = acquisitions!.dataPoints.find(
      (p) => p.attributes['redlock.outcome'] === 'acquired',
    );
    expect(acquired!.value).toBeGreaterThanOrEqual(11);
    // Each node's answer time, for the nodes that answered before the
    // quorum settled the round (at least a quorum of them).
    const nodes = await metric('redlock.node.duration');
    const addresses = nodes!.dataPoints.map(
      (p) => p.attributes['server.address'],
    );
    expect(addresses.length).toBeGreaterThanOrEqual(3);
    const hosts = quorumUrls().map((u) => new URL(u).host);
    for (const address of addresses) expect(hosts).toContain(address);
    const held = await metric('redlock.locks.held');
    expect(held!.dataPoints[0].value).toBe(0);
  });

  it('a lost lock counts in redlock.locks.lost, and a failed extension in redlock.extensions.failed', async () => {
    const lostBefore =
      (await metric('redlock.locks.lost'))?.dataPoints[0]?.value ?? 0;
    const locks = app.get(LockService);
    const lock = await locks.acquire('gone', { ttl: 2000 });
    await Promise.all(admin.map((c) => c.del(`${prefix}gone`)));
    await lock.extend().catch(() => undefined);
    expect((await metric('redlock.locks.lost'))!.dataPoints[0].value).toBe(
      (lostBefore as number) + 1,
    );
    expect(
      (await metric('redlock.extensions.failed'))!.dataPoints[0].value,
    ).toBeGreaterThanOrEqual(1);
    const extend = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'redlock.extend')!;
    expect(extend.attributes['error.type']).toBe('LockExtendError');
    expect(extend.status.code).toBe(2);
  });

  it('traces the fencing round of a fenced acquire', async () => {
    const lock = await app
      .get(LockService)
      .acquire('fenced', { fencing: true });
    await lock.release();
    const fence = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'redlock.fence')!;
    expect(fence.attributes).toMatchObject({
      'db.system': 'redis',
      'redlock.resources': ['fenced'],
      'redlock.fencing_tokens': [`fenced=${lock.fencingToken}`],
    });
  });
});
