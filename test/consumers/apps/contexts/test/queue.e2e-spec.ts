import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import Redis from 'ioredis';
import {
  closedPorts,
  DIST,
  linesAt,
  type Replica,
  startReplica,
  stopAll,
  waitUntil,
} from './schedule.processes';

/**
 * @nestjs/bullmq workers in 2 OS processes (2 jobs at once each), every job
 * on one account, locked per account with nestjs-redlock
 * (src/queue/accounts.processor.ts): the documented recipe, the same with
 * every lock node down, and `skip` in the processor (the control). The
 * workers record each body and each attempt in Redis; the test reads them
 * there and BullMQ's own counts.
 */
const urls = (process.env.REDIS_URLS ?? '').split(',').filter(Boolean);
const run = `${process.pid}-${Date.now()}`;
// Above the sum of each test's own bounded waits (boot, jobs, stop).
jest.setTimeout(120_000);

let redis: Redis;
const queues: Queue[] = [];

interface Outcome {
  queue: Queue;
  counts: Record<string, number>;
  /** How many times each job's body ran, by job id. */
  bodies: Map<string, number>;
  /** Attempts per `<pid>:<outcome>`. */
  attempts: Record<string, number>;
  maxInside: number;
  retryAfterMs: number[];
}

async function workers(
  runId: string,
  queue: string,
  mode: 'recipe' | 'skip',
  {
    count = 2,
    env = {},
  }: { count?: number; env?: Record<string, string> } = {},
): Promise<Replica[]> {
  const started = Array.from({ length: count }, () =>
    startReplica('queue/main.js', {
      REDIS_URLS: urls.join(','),
      RUN_ID: runId,
      QUEUE: queue,
      MODE: mode,
      ...env,
    }),
  );
  await Promise.all(started.map((w) => w.waitFor(/ready \d+/, 30_000)));
  return started;
}

/** Adds `n` jobs on one account and waits until none is left to run. */
async function settle(
  runId: string,
  name: string,
  n: number,
): Promise<Outcome> {
  const connection = new URL(urls[0]);
  const queue = new Queue(name, {
    connection: { host: connection.hostname, port: Number(connection.port) },
  });
  queues.push(queue);
  await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({
      name: 'settle',
      data: { account: 'acme' },
      opts: { jobId: `job-${i}` },
    })),
  );
  const counts = await waitUntil(
    `${n} jobs completed or failed`,
    async () => {
      const now = await queue.getJobCounts();
      return now.completed + now.failed === n ? now : undefined;
    },
    60_000,
    250,
  );
  const key = (...parts: string[]) => ['queue', runId, ...parts].join(':');
  const [bodies, attempts, maxInside, retryAfter] = await Promise.all([
    redis.hgetall(key('bodies')),
    redis.hgetall(key('attempts')),
    redis.get(key('acme', 'max-inside')),
    redis.lrange(key('retry-after'), 0, -1),
  ]);
  return {
    queue,
    counts,
    bodies: new Map(Object.entries(bodies).map(([id, k]) => [id, Number(k)])),
    attempts: Object.fromEntries(
      Object.entries(attempts).map(([what, k]) => [what, Number(k)]),
    ),
    maxInside: Number(maxInside ?? 0),
    retryAfterMs: retryAfter.map(Number),
  };
}

/** Stops them with SIGTERM; each must exit by itself, with code 0. */
async function stopped(started: Replica[]): Promise<void> {
  const exits = await Promise.all(started.map((w) => w.stop()));
  expect(exits).toEqual(
    started.map(() => ({ code: 0, signal: null, killed: false })),
  );
}

describe('@nestjs/bullmq workers on 2 processes (nestjs-redlock)', () => {
  beforeAll(() => {
    expect(urls.length).toBeGreaterThanOrEqual(3);
    expect(existsSync(join(DIST, 'queue/main.js'))).toBe(true);
    redis = new Redis(urls[0]);
  });

  afterEach(() => stopAll());

  afterAll(async () => {
    await stopAll();
    await Promise.all(queues.map((queue) => queue.close()));
    await redis?.quit();
  });

  it('runs every job once, one at a time per account: conflicts go back to delayed (the recipe)', async () => {
    const runId = `recipe-${run}`;
    const n = 40;
    const started = await workers(runId, `accounts-${runId}`, 'recipe');
    const outcome = await settle(runId, `accounts-${runId}`, n);
    await stopped(started);

    const delayed = Object.entries(outcome.attempts)
      .filter(([what]) => what.endsWith(':delayed'))
      .reduce((sum, [, k]) => sum + k, 0);
    console.log(
      `recipe: ${outcome.counts.completed} completed, ${outcome.counts.failed} failed, ${outcome.bodies.size} bodies, ${delayed} conflicts sent back to delayed, retryAfterMs ${Math.min(...outcome.retryAfterMs)}-${Math.max(...outcome.retryAfterMs)}, attempts ${JSON.stringify(outcome.attempts)}`,
    );
    expect(outcome.counts).toMatchObject({ completed: n, failed: 0 });
    expect([...outcome.bodies.keys()].sort()).toEqual(
      Array.from({ length: n }, (_, i) => `job-${i}`).sort(),
    );
    expect([...outcome.bodies.values()]).toEqual(Array(n).fill(1));
    expect(outcome.maxInside).toBe(1);
    // The lock was contended (else the test shows nothing), by both workers.
    expect(delayed).toBeGreaterThan(0);
    for (const worker of started)
      expect(
        Object.keys(outcome.attempts).some((what) =>
          what.startsWith(`${worker.pid}:`),
        ),
      ).toBe(true);
    // The conflict's advice: whole ms, within the 2 s lease.
    for (const ms of outcome.retryAfterMs) {
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(2_000);
    }
    for (const worker of started)
      expect(linesAt(worker.output(), 'ERROR')).toEqual([]);
  });

  it('fails the job when no lock node is reachable: an outage is not a conflict', async () => {
    const runId = `outage-${run}`;
    const n = 3;
    const ports = await closedPorts(3);
    const started = await workers(runId, `accounts-${runId}`, 'recipe', {
      count: 1,
      env: {
        REDIS_URLS: ports.map((port) => `redis://127.0.0.1:${port}`).join(','),
        QUEUE_URL: urls[0],
        // One job at a time: none meets another of this process in line.
        CONCURRENCY: '1',
      },
    });
    const outcome = await settle(runId, `accounts-${runId}`, n);
    await stopped(started);

    const failed = await outcome.queue.getFailed();
    console.log(
      `outage: ${outcome.counts.completed} completed, ${outcome.counts.failed} failed, ${outcome.bodies.size} bodies; reason: ${failed[0]?.failedReason.slice(0, 120)}`,
    );
    // Failed, to be retried by attempts/backoff: not delayed as a
    // conflict, not completed without running.
    expect(outcome.counts).toMatchObject({ completed: 0, failed: n });
    expect(outcome.bodies.size).toBe(0);
    // Never sent back to delayed as a conflict, never ran.
    expect(Object.keys(outcome.attempts)).toEqual([]);
    for (const job of failed) {
      expect(job.failedReason).toMatch(/LockNotAcquired|quorum/);
      expect(job.attemptsMade).toBe(1);
    }
  });

  it("drops jobs with onNotAcquired: 'skip' in the processor (the wrong recipe, the control)", async () => {
    const runId = `skip-${run}`;
    const n = 10;
    const started = await workers(runId, `accounts-${runId}`, 'skip');
    const outcome = await settle(runId, `accounts-${runId}`, n);
    await stopped(started);

    const dropped = n - outcome.bodies.size;
    console.log(
      `skip: ${outcome.counts.completed} completed, ${outcome.counts.failed} failed, ${outcome.bodies.size} bodies ran, ${dropped} jobs dropped`,
    );
    // Every job counts as done, yet some never ran: they are lost.
    expect(outcome.counts).toMatchObject({ completed: n, failed: 0 });
    expect(dropped).toBeGreaterThan(0);
    expect(outcome.maxInside).toBe(1);
  });
});
