import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  subscribe,
  tracingChannel,
  unsubscribe,
} from 'node:diagnostics_channel';
import {
  MeterProvider,
  MetricReader,
  type DataPoint,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import {
  LockExtendError,
  REDLOCK_CHANNELS,
  Redlock,
  type AcquireMessage,
} from 'nestjs-redlock';
import { enableRedlockTelemetry } from 'nestjs-redlock/otel';
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

/**
 * A semaphore's permit says so on every event and in OpenTelemetry
 * (`permits`, `redlock.permits`), a mutex's events and telemetry carry no
 * shape at all.
 */
describe('lock shapes in events and OpenTelemetry', () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const disable = enableRedlockTelemetry({ tracerProvider, meterProvider });
  const keyPrefix = uniquePrefix('shape');
  const admin = inspect(quorumUrls());
  const redlocks: Redlock[] = [];
  const make = () => {
    const r = new Redlock({
      clients: quorumUrls(),
      keyPrefix,
      logger: { warn: () => undefined },
    });
    redlocks.push(r);
    return r;
  };
  afterAll(async () => {
    disable();
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });
  beforeEach(() => exporter.reset());

  /** Every message published on the plain channel `name` while `fn` runs. */
  async function heard<T>(
    names: readonly string[],
    fn: () => Promise<T>,
  ): Promise<{ result: T; messages: Map<string, unknown[]> }> {
    const messages = new Map<string, unknown[]>();
    const listeners = names.map((name) => {
      messages.set(name, []);
      const listener = (m: unknown) => messages.get(name)!.push(m);
      subscribe(name, listener);
      return [name, listener] as const;
    });
    try {
      return { result: await fn(), messages };
    } finally {
      for (const [name, listener] of listeners) unsubscribe(name, listener);
    }
  }

  /** The data points of metric `name`, as last collected. */
  async function points(name: string): Promise<DataPoint<unknown>[]> {
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m: MetricData) => m.descriptor.name === name);
    return metric?.dataPoints ?? [];
  }

  it('puts permits on the acquire, extend and release messages and spans of a semaphore', async () => {
    const r = make();
    const acquires: AcquireMessage[] = [];
    const onAcquire = {
      start: (m: unknown) => acquires.push(m as AcquireMessage),
      end() {},
      asyncStart() {},
      asyncEnd() {},
      error() {},
    };
    const acquireChannel = tracingChannel(REDLOCK_CHANNELS.acquire);
    acquireChannel.subscribe(onAcquire);
    try {
      const lock = await r.acquire('psp', { permits: 3 });
      expect(lock.resources[0]).toMatch(/^psp#permit-[0-2]$/);
      await lock.extend();
      await lock.release();
    } finally {
      acquireChannel.unsubscribe(onAcquire);
    }
    expect(acquires).toHaveLength(1);
    expect(acquires[0]).toMatchObject({ resources: ['psp'], permits: 3 });
    expect(acquires[0]).not.toHaveProperty('mode');
    const spans = exporter.getFinishedSpans();
    for (const name of ['redlock.acquire', 'redlock.extend', 'redlock.release'])
      expect(
        spans.find((s) => s.name === name)?.attributes['redlock.permits'],
      ).toBe(3);
    expect(
      spans.find((s) => s.name === 'redlock.acquire')?.attributes[
        'redlock.mode'
      ],
    ).toBeUndefined();
  });

  it('counts a semaphore’s acquisitions, waits and holds under redlock.permits, and its held permits back to 0', async () => {
    const r = make();
    const locks = await Promise.all(
      [0, 1].map(() => r.acquire('counted', { permits: 2 })),
    );
    const semaphore = (p: DataPoint<unknown>) =>
      p.attributes['redlock.permits'] === 2;
    const held = (await points('redlock.locks.held')).find(semaphore);
    expect(held?.value).toBe(2);
    expect(
      (await points('redlock.acquisitions')).find(
        (p) => semaphore(p) && p.attributes['redlock.outcome'] === 'acquired',
      )?.value,
    ).toBeGreaterThanOrEqual(2);
    expect((await points('redlock.wait.duration')).some(semaphore)).toBe(true);
    await Promise.all(locks.map((l) => l.release()));
    expect((await points('redlock.locks.held')).find(semaphore)?.value).toBe(0);
    expect((await points('redlock.hold.duration')).some(semaphore)).toBe(true);
  });

  it('tells a full semaphore’s not-acquired and a lost permit with permits, in the lost count too', async () => {
    const r = make();
    const held = await r.acquire('full', { permits: 1, ttl: 10_000 });
    const { result: refused, messages } = await heard(
      [REDLOCK_CHANNELS.notAcquired, REDLOCK_CHANNELS.lost],
      async () => {
        const refused = await make()
          .acquire('full', { permits: 1, waitTimeout: 0, nodeTimeout: 2000 })
          .catch((e: unknown) => e);
        // Lost: its slot key gone from every node, the extension fails.
        await Promise.all(admin.map((c) => c.del(`${keyPrefix}full#permit-0`)));
        await held.extend().catch((e: unknown) => e);
        return refused;
      },
    );
    await held.release();
    expect(refused).toMatchObject({ reason: 'busy' });
    expect(messages.get(REDLOCK_CHANNELS.notAcquired)).toEqual([
      expect.objectContaining({ resources: ['full'], permits: 1 }),
    ]);
    expect(messages.get(REDLOCK_CHANNELS.lost)).toEqual([
      expect.objectContaining({ resources: ['full#permit-0'], permits: 1 }),
    ]);
    const lost = (await points('redlock.locks.lost')).find(
      (p) => p.attributes['redlock.permits'] === 1,
    );
    expect(lost?.value).toBe(1);
    const failed = (await points('redlock.extensions.failed')).find(
      (p) => p.attributes['redlock.permits'] === 1,
    );
    expect(failed?.value).toBe(1);
    const extend = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'redlock.extend');
    expect(extend?.attributes).toMatchObject({
      'redlock.permits': 1,
      'error.type': LockExtendError.name,
    });
  });

  it('puts mode on a read/write lock’s spans, its not-acquired and its metrics, held back to 0 per side', async () => {
    const [r, other] = [make(), make()];
    const read = await r.acquire('doc', { mode: 'read' });
    const { messages } = await heard(
      [REDLOCK_CHANNELS.notAcquired],
      async () => {
        const refused = await other
          .acquire('doc', { mode: 'write', waitTimeout: 0, nodeTimeout: 2000 })
          .catch((e: unknown) => e);
        expect(refused).toMatchObject({ reason: 'busy' });
      },
    );
    expect(messages.get(REDLOCK_CHANNELS.notAcquired)).toEqual([
      expect.objectContaining({ resources: ['doc'], mode: 'write' }),
    ]);
    const side = (mode: string) => (p: DataPoint<unknown>) =>
      p.attributes['redlock.mode'] === mode;
    expect((await points('redlock.locks.held')).find(side('read'))?.value).toBe(
      1,
    );
    await read.extend();
    await read.release();
    const write = await other.acquire('doc', { mode: 'write' });
    await write.release();
    const spans = exporter.getFinishedSpans();
    const modes = (name: string) =>
      spans
        .filter((s) => s.name === name)
        .map((s) => s.attributes['redlock.mode']);
    expect(modes('redlock.acquire').sort()).toEqual(['read', 'write', 'write']);
    expect(modes('redlock.extend')).toEqual(['read']);
    expect(modes('redlock.release').sort()).toEqual(['read', 'write']);
    const held = await points('redlock.locks.held');
    expect(held.find(side('read'))?.value).toBe(0);
    expect(held.find(side('write'))?.value).toBe(0);
    expect(
      (await points('redlock.acquisitions')).find(
        (p) => side('write')(p) && p.attributes['redlock.outcome'] === 'busy',
      )?.value,
    ).toBe(1);
  });

  it('leaves a mutex’s messages, spans and metrics without a shape', async () => {
    const r = make();
    const { messages } = await heard([REDLOCK_CHANNELS.attempt], async () => {
      const lock = await r.acquire('plain');
      await lock.release();
    });
    for (const m of messages.get(REDLOCK_CHANNELS.attempt)!) {
      expect(m).not.toHaveProperty('permits');
      expect(m).not.toHaveProperty('mode');
    }
    const spans = exporter
      .getFinishedSpans()
      .filter((s) => String(s.attributes['redlock.resources']) === 'plain');
    expect(spans.map((s) => s.name).sort()).toEqual([
      'redlock.acquire',
      'redlock.release',
    ]);
    for (const span of spans) {
      expect(span.attributes).not.toHaveProperty(['redlock.permits']);
      expect(span.attributes).not.toHaveProperty(['redlock.mode']);
    }
    const held = await points('redlock.locks.held');
    const mutex = held.find((p) => Object.keys(p.attributes).length === 0);
    expect(mutex?.value).toBe(0);
  });
});
