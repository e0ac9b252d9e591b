import { afterAll, describe, expect, it } from '@jest/globals';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  JitteredRetry,
  LockNotAcquiredError,
  Redlock,
  REDLOCK_CHANNELS,
  type AttemptMessage,
  type RedlockOptions,
  type WaitMessage,
} from 'nestjs-redlock';
import { scanKeys } from '../../scripts/redis-nodes.mjs';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';

// `JitteredRetry`: a waiting acquire tries again after retryDelay + 0..retryJitter
// ms (never past the holder's lease or the wait timeout), and only polls: it
// takes no place in the nodes' wait queues and hears no release message.
// Measured on the shared quorum nodes through the library's own events.

type Seen =
  | { kind: 'attempt'; at: number; message: AttemptMessage }
  | { kind: 'wait'; at: number; message: WaitMessage }
  | { kind: 'woken'; at: number };

/** The attempt, wait and woken events for `resource`, with when they were published. */
function watchEvents(resource: string): { seen: Seen[]; stop: () => void } {
  const seen: Seen[] = [];
  const mine = (m: unknown) =>
    (m as { resources?: readonly string[] }).resources?.includes(resource);
  const onAttempt = (m: unknown) => {
    if (mine(m))
      seen.push({
        kind: 'attempt',
        at: performance.now(),
        message: m as AttemptMessage,
      });
  };
  const onWait = (m: unknown) => {
    if (mine(m))
      seen.push({
        kind: 'wait',
        at: performance.now(),
        message: m as WaitMessage,
      });
  };
  // A woken message names keys, not resources: any is one too many here.
  const onWoken = () => seen.push({ kind: 'woken', at: performance.now() });
  subscribe(REDLOCK_CHANNELS.attempt, onAttempt);
  subscribe(REDLOCK_CHANNELS.wait, onWait);
  subscribe(REDLOCK_CHANNELS.woken, onWoken);
  return {
    seen,
    stop: () => {
      unsubscribe(REDLOCK_CHANNELS.attempt, onAttempt);
      unsubscribe(REDLOCK_CHANNELS.wait, onWait);
      unsubscribe(REDLOCK_CHANNELS.woken, onWoken);
    },
  };
}

/** How long each wait lasted: from its event to the start of the next attempt. */
function waitDurations(seen: Seen[]): number[] {
  const durations: number[] = [];
  seen.forEach((event, i) => {
    if (event.kind !== 'wait') return;
    const next = seen.slice(i + 1).find((e) => e.kind === 'attempt');
    if (next?.kind === 'attempt')
      durations.push(next.at - next.message.durationMs - event.at);
  });
  return durations;
}

describe('JitteredRetry against real Redis', () => {
  const admin = inspect(quorumUrls());
  const redlocks: Redlock[] = [];
  const make = (prefixes: Partial<RedlockOptions>, polls: boolean) => {
    const redlock = new Redlock({
      clients: quorumUrls(),
      ...prefixes,
      ...(polls ? { waitStrategy: new JitteredRetry() } : {}),
    });
    redlocks.push(redlock);
    return redlock;
  };
  /** A holder (default strategy) and a waiter that polls, on the same prefixes. */
  const pair = () => {
    const prefixes = {
      keyPrefix: uniquePrefix('jr'),
      metaPrefix: uniquePrefix('jr-meta'),
    };
    return {
      holder: make(prefixes, false),
      waiter: make(prefixes, true),
      ...prefixes,
    };
  };

  afterAll(async () => {
    await Promise.all(redlocks.map((r) => r.quit()));
    await closeAll(admin);
  });

  it('waits retryDelay plus a random 0..retryJitter between attempts, until waitTimeout', async () => {
    const { holder, waiter } = pair();
    const held = await holder.acquire('spaced', { ttl: 10_000 });
    const events = watchEvents('spaced');
    const started = performance.now();
    const refused = await waiter
      .acquire('spaced', { retryDelay: 60, retryJitter: 120, waitTimeout: 900 })
      .catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    events.stop();
    await held.release();
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    const error = refused as LockNotAcquiredError;
    expect(error.reason).toBe('busy');
    const attempts = events.seen.filter((e) => e.kind === 'attempt');
    expect(error.attempts).toBe(attempts.length);
    // 900 ms of waits of 60..180 ms each: 5 to 15 waits (the last one is cut
    // to the time left, so it may be shorter).
    const waits = waitDurations(events.seen);
    expect(waits.length).toBe(attempts.length - 1);
    expect(waits.length).toBeGreaterThanOrEqual(5);
    expect(waits.length).toBeLessThanOrEqual(16);
    const full = waits.slice(0, -1);
    // Never before retryDelay (1 ms for timer rounding); not far past
    // retryDelay + retryJitter (slack for a loaded machine).
    for (const wait of full) {
      expect(wait).toBeGreaterThanOrEqual(59);
      expect(wait).toBeLessThan(60 + 120 + 250);
    }
    // Jittered: waits drawn from 0..120 ms are not all the same.
    expect(Math.max(...full) - Math.min(...full)).toBeGreaterThan(5);
    expect(elapsed).toBeGreaterThanOrEqual(899);
    expect(elapsed).toBeLessThan(900 + 1000);
  });

  it('only polls: it takes no place in the wait queues, subscribes to nothing, and a release does not wake it', async () => {
    const { holder, waiter, metaPrefix } = pair();
    const held = await holder.acquire('polled', { ttl: 10_000 });
    await flushed(holder);
    const events = watchEvents('polled');
    const started = performance.now();
    // A poll long enough for the checks below to end well before it, even
    // on a busy machine (the release must come more than 1 s before it).
    const waiting = waiter.acquire('polled', {
      retryDelay: 3000,
      retryJitter: 0,
      waitTimeout: 8000,
    });
    // Refused once and waiting: nothing of it on the nodes.
    while (!events.seen.some((e) => e.kind === 'wait'))
      await new Promise((r) => setTimeout(r, 10));
    await flushed(waiter);
    for (const client of admin) {
      expect(await scanKeys(client, `${metaPrefix}*`)).toEqual([]);
      expect(
        await client.call(
          'PUBSUB',
          'NUMSUB',
          waiter.contention.listener.channel,
        ),
      ).toEqual([waiter.contention.listener.channel, 0]);
    }
    await held.release();
    const releasedAt = performance.now();
    const lock = await waiting;
    const gotAt = performance.now();
    events.stop();
    // It got the lock at its next poll, 3 s after its first attempt, not
    // at the release.
    expect(gotAt - started).toBeGreaterThanOrEqual(2990);
    expect(gotAt - releasedAt).toBeGreaterThan(1000);
    expect(events.seen.filter((e) => e.kind === 'attempt')).toHaveLength(2);
    expect(events.seen.some((e) => e.kind === 'woken')).toBe(false);
    expect(waiter.contention.listener.wakeups).toBe(0);
    await lock.release();
  });

  it("never waits past the holder's lease: a lock nobody releases is taken once it expires", async () => {
    const { holder, waiter } = pair();
    // Never released nor extended: its keys expire 400 ms after they were
    // set, which is after `asked` (the nodes' ms clock: 2 ms of slack).
    const asked = performance.now();
    await holder.acquire('expiring', { ttl: 400 });
    const lock = await waiter.acquire('expiring', {
      retryDelay: 3000,
      retryJitter: 0,
      waitTimeout: 5000,
    });
    const elapsed = performance.now() - asked;
    // The wait was cut to the lease reported by the nodes (+1 ms), far
    // below retryDelay.
    expect(elapsed).toBeGreaterThanOrEqual(398);
    expect(elapsed).toBeLessThan(2000);
    await lock.release();
  });

  it('never waits past the wait timeout, and gives up with the attempt made at its end', async () => {
    const { holder, waiter } = pair();
    const held = await holder.acquire('bounded', { ttl: 10_000 });
    // Every node holds the key before the waiter tries (an acquire settles
    // at a quorum), so each of its attempts is refused by all three.
    await flushed(holder);
    const started = performance.now();
    // A node timeout a starved process still meets: with the default (100
    // ms) a stalled event loop turns the last attempt's refusals into
    // timeouts, and the reason into `unreachable` (seen on a busy CI run).
    const refused = await waiter
      .acquire('bounded', {
        retryDelay: 3000,
        retryJitter: 0,
        waitTimeout: 300,
        nodeTimeout: 2000,
      })
      .catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    await held.release();
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    expect(refused).toMatchObject({ reason: 'busy', attempts: 2 });
    expect(elapsed).toBeGreaterThanOrEqual(299);
    expect(elapsed).toBeLessThan(1500);
  });

  it("gives up at once with the signal's reason when the caller aborts while it waits", async () => {
    const { holder, waiter } = pair();
    const held = await holder.acquire('aborted', { ttl: 10_000 });
    const controller = new AbortController();
    const started = performance.now();
    const waiting = waiter.acquire('aborted', {
      retryDelay: 5000,
      retryJitter: 0,
      waitTimeout: 8000,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('caller went away')), 100);
    await expect(waiting).rejects.toThrow('caller went away');
    expect(performance.now() - started).toBeLessThan(2000);
    await held.release();
  });
});
