import { createHash } from 'node:crypto';
import {
  subscribe,
  tracingChannel,
  unsubscribe,
} from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  LockExtendError,
  LockNotAcquiredError,
  Redlock,
  REDLOCK_CHANNELS,
  type Lock,
} from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  SLOW_RETRY,
  startListening,
  uniquePrefix,
} from '../utils/nodes.js';

type Event = [kind: string, message: Record<string, unknown>];

/** Records every event of every channel, in order, while a test runs. */
function record(): { events: Event[]; stop: () => void } {
  const events: Event[] = [];
  const stops: (() => void)[] = [];
  for (const name of ['acquire', 'extend', 'release', 'fence'] as const) {
    const handlers = {
      start: (m: unknown) =>
        events.push([`${name}:start`, { ...(m as object) }]),
      end: () => undefined,
      asyncStart: () => undefined,
      asyncEnd: (m: unknown) =>
        events.push([`${name}:end`, { ...(m as object) }]),
      error: (m: unknown) =>
        events.push([`${name}:error`, { ...(m as object) }]),
    };
    const channel = tracingChannel(REDLOCK_CHANNELS[name]);
    channel.subscribe(handlers);
    stops.push(() => channel.unsubscribe(handlers));
  }
  for (const name of [
    'attempt',
    'lost',
    'wait',
    'woken',
    'handover',
    'notAcquired',
  ] as const) {
    const handler = (m: unknown) => events.push([name, { ...(m as object) }]);
    subscribe(REDLOCK_CHANNELS[name], handler);
    stops.push(() => unsubscribe(REDLOCK_CHANNELS[name], handler));
  }
  return { events, stop: () => stops.forEach((s) => s()) };
}

const hashOf = (value: string) =>
  createHash('sha256').update(value).digest('base64url').slice(0, 16);
const of = (events: Event[], kind: string) =>
  events.filter(([k]) => k === kind).map(([, m]) => m);

describe('lock events on diagnostics_channel', () => {
  const admin = inspect(quorumUrls());
  let prefix: string;
  let a: Redlock;
  let b: Redlock;
  let recording: ReturnType<typeof record>;

  beforeEach(() => {
    prefix = uniquePrefix('events');
    const options = {
      clients: quorumUrls(),
      keyPrefix: prefix,
      logger: { warn: () => undefined },
    };
    a = new Redlock(options);
    b = new Redlock(options);
  });
  afterEach(async () => {
    recording?.stop();
    await Promise.all([a.quit(), b.quit()]);
  });
  afterAll(() => closeAll(admin));

  it('traces acquire and release with the value hash, never the value, attempts, validity, votes and hold time', async () => {
    recording = record();
    const started = performance.now();
    const lock = await a.acquire('order:1', { ttl: 2000 });
    const took = performance.now() - started;
    await sleep(20);
    await lock.release();
    const { events } = recording;
    const [start] = of(events, 'acquire:start');
    expect(start).toMatchObject({
      resources: ['order:1'],
      call: 'acquire',
      ttl: 2000,
      fencing: false,
    });
    const [end] = of(events, 'acquire:end');
    expect(end.valueHash).toBe(hashOf(lock.value));
    expect(end.attempts).toBe(1);
    // The lease less the attempt (at most the whole call) and the drift
    // (1 % + 2 ms): on a busy machine the attempt alone may take 100 ms.
    expect(end.validityMs).toBeGreaterThanOrEqual(2000 - took - 22 - 1);
    expect(end.validityMs).toBeLessThanOrEqual(2000);
    expect(
      (end.nodes as { outcome: string }[]).filter(
        (n) => n.outcome === 'granted',
      ).length,
    ).toBeGreaterThanOrEqual(3);
    const [attempt] = of(events, 'attempt');
    expect(attempt).toMatchObject({
      granted: true,
      valueHash: hashOf(lock.value),
    });
    expect((attempt.latenciesMs as unknown[]).length).toBe(5);
    const [release] = of(events, 'release:start');
    expect(release.holdMs).toBeGreaterThanOrEqual(15);
    expect(of(events, 'release:end')[0].result).toMatchObject({
      released: true,
    });
    // The value is the holder's secret: no message carries it.
    expect(JSON.stringify(events)).not.toContain(lock.value);
  });

  it('tells a wait, the release message that wakes it, and an acquire that gives up', async () => {
    await startListening(a, b);
    recording = record();
    const held = await a.acquire('hot', { ttl: 5000 });
    const waiting = b.acquire('hot', SLOW_RETRY);
    await sleep(100);
    await held.release();
    const lock = await waiting;
    const { events } = recording;
    const [wait] = of(events, 'wait');
    expect(wait).toMatchObject({
      resources: ['hot'],
      attempt: 1,
      valueHash: hashOf(lock.value),
    });
    expect(wait.holderTtlMs).toBeGreaterThan(4000);
    const woken = of(events, 'woken');
    expect(woken.length).toBeGreaterThanOrEqual(1);
    expect(woken[0]).toMatchObject({
      keys: [`${prefix}hot`],
      valueHash: hashOf(lock.value),
      given: true,
    });
    const ends = of(events, 'acquire:end');
    const bEnd = ends.find((m) => m.valueHash === hashOf(lock.value))!;
    expect(bEnd.waitMs).toBeGreaterThanOrEqual(80);

    // Every node holds b's key first (an acquire settles at a quorum): a
    // late node's grant would make a split vote, tried a second time.
    await flushed(b);
    const refused = await a
      .acquire('hot', { waitTimeout: 0 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    const [gaveUp] = of(events, 'notAcquired');
    expect(gaveUp).toMatchObject({
      resources: ['hot'],
      reason: 'busy',
      attempts: 1,
    });
    expect(of(events, 'acquire:error').length).toBe(1);
    await lock.release();
  });

  it('traces the fencing round with the tokens it issued', async () => {
    recording = record();
    const lock = await a.acquire('fenced', { fencing: true });
    const { events } = recording;
    expect(of(events, 'fence:start')[0]).toMatchObject({
      resources: ['fenced'],
      valueHash: hashOf(lock.value),
    });
    expect(of(events, 'fence:end')[0].fencingTokens).toEqual({
      fenced: lock.fencingToken,
    });
    expect(of(events, 'acquire:end')[0].fencingTokens).toEqual({
      fenced: lock.fencingToken,
    });
    await lock.release();
  });

  it('traces extensions, and tells a lock lost when its keys are gone', async () => {
    recording = record();
    const lock: Lock = await a.acquire('ext', { ttl: 1000 });
    await lock.extend(3000);
    const { events } = recording;
    expect(of(events, 'extend:end')[0]).toMatchObject({
      ttl: 3000,
      valueHash: hashOf(lock.value),
    });
    expect(of(events, 'extend:end')[0].validityMs).toBeGreaterThan(2500);
    await Promise.all(admin.map((c) => c.del(`${prefix}ext`)));
    await expect(lock.extend()).rejects.toBeInstanceOf(LockExtendError);
    expect(of(events, 'extend:error')).toHaveLength(1);
    const [lost] = of(events, 'lost');
    expect(lost).toMatchObject({
      resources: ['ext'],
      valueHash: hashOf(lock.value),
    });
    expect(lost.reason).toMatch(/extension failed/);
    expect(lost.holdMs).toBeGreaterThanOrEqual(0);
  });

  it('tells a lease passed to another caller of the process', async () => {
    recording = record();
    const first = await a.acquire('pass');
    const second = a.acquire('pass');
    await sleep(10);
    await first.release();
    const next = await second;
    expect(of(recording.events, 'handover')).toEqual([
      { resources: ['pass'], valueHash: hashOf(next.value), via: 'queue' },
    ]);
    await next.release();
  });

  it('builds nothing while nobody listens', async () => {
    const lock = await a.acquire('quiet');
    // Not even the grant time is read for hold times.
    expect(Number.isNaN(lock.acquiredAt)).toBe(true);
    await lock.release();
  });

  it('logs a lost lock as a warning that names the resources, not the lock value', async () => {
    const warnings: string[] = [];
    const logged = new Redlock({
      clients: quorumUrls(),
      keyPrefix: prefix,
      logger: { warn: (message) => warnings.push(message) },
    });
    try {
      let value = '';
      const running = logged
        .using(
          'logged',
          async (lock) => {
            value = lock.value;
            await Promise.all(admin.map((c) => c.del(`${prefix}logged`)));
            while (!lock.signal.aborted) await sleep(20);
          },
          { ttl: 300 },
        )
        .catch((e: unknown) => e);
      await running;
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/"logged" was lost/);
      expect(warnings[0]).not.toContain(value);
    } finally {
      await logged.quit();
    }
  });
});
