import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
 * @nestjs/schedule jobs on replicas that are separate OS processes: a
 * @Cron and an @Interval job, each calling a
 * `@Locked(job, { waitTimeout: 0, onNotAcquired: 'skip', minHold })` method
 * with a 10 ms body. The replicas' job bodies start 0, 50 and 100 ms apart
 * (clock skew, timers). Also: replicas firing together (and the docs'
 * form, @Cron and @Locked on one method), the old recipe without minHold
 * (the control), every lock node down, a lock held elsewhere, and a replica
 * shut down right after its run. The replicas record every attempt and
 * every run in Redis (src/schedule/recorder.service.ts); the test reads
 * them there, and their output from their stdout and stderr.
 */
const urls = (process.env.REDIS_URLS ?? '').split(',').filter(Boolean);
const run = `${process.pid}-${Date.now()}`;
const JOBS = ['cron-report', 'interval-report'] as const;
type Job = (typeof JOBS)[number] | 'stacked-report';
const SKEWS = [0, 50, 100];
// Above the sum of each test's own bounded waits (boot, ticks, stop).
jest.setTimeout(120_000);

interface Attempt {
  pid: number;
  tick: number;
  at: number;
  outcome: string;
}

interface JobRecord {
  attempts: Attempt[];
  /** Bodies that ran, per tick. */
  runs: Map<number, number>;
  /** Most bodies of this job running at once, across the replicas. */
  maxInside: number;
}

let redis: Redis;

async function read(runId: string, job: Job): Promise<JobRecord> {
  const key = (part: string) => `sched:${runId}:${job}:${part}`;
  const [attempts, runs, maxInside] = await Promise.all([
    redis.lrange(key('attempts'), 0, -1),
    redis.hgetall(key('runs')),
    redis.get(key('max-inside')),
  ]);
  return {
    attempts: attempts.map((text) => JSON.parse(text) as Attempt),
    runs: new Map(
      Object.entries(runs).map(([tick, n]) => [Number(tick), Number(n)]),
    ),
    maxInside: Number(maxInside ?? 0),
  };
}

/**
 * The ticks every replica attempted, without the first and the last one:
 * at the edges of the window a replica may have been starting or stopping.
 */
function fullTicks(record: JobRecord, replicas: number): number[] {
  const pids = new Map<number, Set<number>>();
  for (const { tick, pid } of record.attempts)
    pids.set(tick, (pids.get(tick) ?? new Set()).add(pid));
  const full = [...pids]
    .filter(([, seen]) => seen.size === replicas)
    .map(([tick]) => tick)
    .sort((a, b) => a - b);
  return full.slice(1, -1);
}

/** How far apart the replicas' locked calls started, per tick (ms). */
function spreads(record: JobRecord, ticks: number[]): number[] {
  return ticks.map((tick) => {
    const at = record.attempts.filter((a) => a.tick === tick).map((a) => a.at);
    return Math.max(...at) - Math.min(...at);
  });
}

/** Starts one replica per skew; resolves once each has booted. */
async function replicas(
  runId: string,
  env: Record<string, string>,
  skews = SKEWS,
  own: Record<string, string>[] = [],
): Promise<Replica[]> {
  // The @Interval timers start at this shared moment: half a second off
  // the @Cron ticks, after every replica had time to boot.
  const alignAt = Math.ceil((Date.now() + 3_000) / 1000) * 1000 + 500;
  const started = skews.map((skew, i) =>
    startReplica('schedule/main.js', {
      REDIS_URLS: urls.join(','),
      RECORD_URL: urls[0],
      RUN_ID: runId,
      SKEW_MS: String(skew),
      ALIGN_AT: String(alignAt),
      ...env,
      ...own[i],
    }),
  );
  await Promise.all(
    started.map((replica) => replica.waitFor(/ready \d+/, 30_000)),
  );
  return started;
}

/** Waits until every job has `count` ticks that all the replicas attempted. */
async function ticksSeen(runId: string, count: number, replicas: number) {
  await waitUntil(
    `${count} full ticks of ${JOBS.join(' and ')}`,
    async () => {
      for (const job of JOBS)
        if (fullTicks(await read(runId, job), replicas).length < count)
          return undefined;
      return true;
    },
    // 1 s per tick, plus room for a slow machine.
    count * 1_000 + 20_000,
  );
}

/** Stops them with SIGTERM; each must exit by itself, with code 0. */
async function stopped(started: Replica[]): Promise<void> {
  const exits = await Promise.all(started.map((replica) => replica.stop()));
  expect(exits).toEqual(
    started.map(() => ({ code: 0, signal: null, killed: false })),
  );
}

describe('@nestjs/schedule jobs on 3 processes (nestjs-redlock)', () => {
  beforeAll(() => {
    expect(urls.length).toBeGreaterThanOrEqual(3);
    expect(existsSync(join(DIST, 'schedule/main.js'))).toBe(true);
    redis = new Redis(urls[0]);
  });

  afterEach(() => stopAll());

  afterAll(async () => {
    await stopAll();
    await redis?.quit();
  });

  it('runs each @Cron and @Interval tick exactly once with minHold, replicas 0/50/100 ms apart', async () => {
    const runId = `once-${run}`;
    const started = await replicas(runId, { MIN_HOLD_MS: '500' });
    await ticksSeen(runId, 8, started.length);
    await stopped(started);

    for (const job of JOBS) {
      const record = await read(runId, job);
      const ticks = fullTicks(record, started.length);
      const runs = ticks.map((tick) => record.runs.get(tick) ?? 0);
      const skew = spreads(record, ticks);
      console.log(
        `${job} with minHold 500: runs per tick ${JSON.stringify(runs)}, replicas' calls spread (ms) ${JSON.stringify(skew)}`,
      );
      expect(ticks.length).toBeGreaterThanOrEqual(8);
      // The skew was there (0/50/100 ms, give or take a loaded machine's
      // timers): the replicas did not fire together.
      expect(Math.max(...skew)).toBeGreaterThanOrEqual(50);
      expect(runs).toEqual(ticks.map(() => 1));
      for (const tick of ticks)
        expect(
          record.attempts
            .filter((a) => a.tick === tick)
            .map((a) => a.outcome)
            .sort(),
        ).toEqual(['ran', 'skipped', 'skipped']);
      expect(
        record.attempts.filter((a) => a.outcome.startsWith('error')),
      ).toEqual([]);
      expect(record.maxInside).toBe(1);
    }
    for (const replica of started)
      expect(linesAt(replica.output(), 'ERROR')).toEqual([]);
  });

  it('runs each tick exactly once when the replicas fire at the same instant, as @Cron with @Locked on one method (the docs) does', async () => {
    const runId = `same-instant-${run}`;
    const started = await replicas(runId, { MIN_HOLD_MS: '500' }, [0, 0, 0]);
    await ticksSeen(runId, 8, started.length);
    await stopped(started);

    // The docs' form takes the lock as the job fires: no skew at all. The
    // ticks every replica attempted, as the @Cron job saw them.
    const ticks = fullTicks(await read(runId, 'cron-report'), started.length);
    const stacked = await read(runId, 'stacked-report');
    const figures: Record<string, number[]> = {
      'stacked-report': ticks.map((tick) => stacked.runs.get(tick) ?? 0),
    };
    for (const job of JOBS) {
      const record = await read(runId, job);
      figures[job] = fullTicks(record, started.length).map(
        (tick) => record.runs.get(tick) ?? 0,
      );
      expect(record.maxInside).toBe(1);
    }
    console.log(`0 ms apart, runs per tick: ${JSON.stringify(figures)}`);
    expect(ticks.length).toBeGreaterThanOrEqual(8);
    // A tick with 0 runs: every replica was refused (each got a minority
    // of the nodes) and skipped it.
    for (const runs of Object.values(figures))
      expect(runs).toEqual(runs.map(() => 1));
    expect(stacked.maxInside).toBe(1);
  });

  it('runs a tick more than once without minHold (the old recipe, the control)', async () => {
    const runId = `no-min-hold-${run}`;
    const started = await replicas(runId, { MIN_HOLD_MS: '0' });
    await ticksSeen(runId, 5, started.length);
    await stopped(started);

    for (const job of JOBS) {
      const record = await read(runId, job);
      const ticks = fullTicks(record, started.length);
      const runs = ticks.map((tick) => record.runs.get(tick) ?? 0);
      console.log(
        `${job} without minHold: runs per tick ${JSON.stringify(runs)}`,
      );
      expect(ticks.length).toBeGreaterThanOrEqual(5);
      // A 10 ms body releases the lock before a replica 50 ms behind
      // tries: it runs the same tick again.
      const repeated = runs.filter((n) => n > 1).length;
      expect(repeated).toBeGreaterThanOrEqual(Math.ceil(ticks.length / 2));
      // Still a lock: the bodies never overlap.
      expect(record.maxInside).toBe(1);
    }
  });

  it('does not skip silently when no lock node is reachable', async () => {
    const ports = await closedPorts(3);
    const down = ports.map((port) => `redis://127.0.0.1:${port}`).join(',');
    const thrown = `down-throw-${run}`;
    const warned = `down-warn-${run}`;
    const common = { REDIS_URLS: down, RECORD_URL: urls[0], SKEW_MS: '0' };
    const alignAt = String(Date.now());
    const [a, b] = [
      startReplica('schedule/main.js', {
        ...common,
        RUN_ID: thrown,
        ALIGN_AT: alignAt,
      }),
      startReplica('schedule/main.js', {
        ...common,
        RUN_ID: warned,
        ALIGN_AT: alignAt,
        ON_UNAVAILABLE: 'warn',
      }),
    ];
    // Start waits for the nodes (5 s) before it gives up on them.
    await Promise.all([a, b].map((r) => r.waitFor(/ready \d+/, 30_000)));
    await waitUntil(
      'two attempts of each job on each replica',
      async () => {
        for (const runId of [thrown, warned])
          for (const job of JOBS)
            if ((await read(runId, job)).attempts.length < 2) return undefined;
        return true;
      },
      20_000,
    );
    // Read before the replicas stop: a tick while one shuts down is
    // skipped (the app is closing), which is not the outage's answer.
    const seen = new Map<string, Awaited<ReturnType<typeof read>>>();
    for (const runId of [thrown, warned])
      for (const job of JOBS)
        seen.set(`${runId} ${job}`, await read(runId, job));
    await stopped([a, b]);

    for (const job of JOBS) {
      // Default: the call rejects, the scheduler logs the error.
      const failed = seen.get(`${thrown} ${job}`)!;
      expect(failed.runs.size).toBe(0);
      expect(new Set(failed.attempts.map((x) => x.outcome))).toEqual(
        new Set(['error:unreachable']),
      );
      const errors = linesAt(a.output(), 'ERROR').filter((line) =>
        line.includes(`"${job}"`),
      );
      expect(errors.length).toBeGreaterThanOrEqual(failed.attempts.length);
      expect(errors[0]).toMatch(/LockNotAcquiredError/);

      // onUnavailable 'warn': skipped, with one warning naming the cause.
      const skipped = seen.get(`${warned} ${job}`)!;
      expect(skipped.runs.size).toBe(0);
      expect(new Set(skipped.attempts.map((x) => x.outcome))).toEqual(
        new Set(['skipped']),
      );
      const warnings = linesAt(b.output(), 'WARN').filter((line) =>
        line.includes(`"${job}"`),
      );
      expect(warnings.length).toBeGreaterThanOrEqual(skipped.attempts.length);
      expect(warnings[0]).toMatch(/quorum|unreachable/i);
    }
    console.log(
      `outage: ERROR lines ${linesAt(a.output(), 'ERROR').length} (throw), WARN lines ${linesAt(b.output(), 'WARN').length} (warn)`,
    );
    expect(linesAt(b.output(), 'ERROR')).toEqual([]);
  });

  it('skips a tick whose lock is held elsewhere without an ERROR line', async () => {
    const runId = `busy-${run}`;
    const nodes = urls.map((url) => new Redis(url));
    try {
      // Another replica's locks: the documented keys, on every node.
      const keys = JOBS.map((job) => `lock:${runId}:${job}`);
      for (const key of keys)
        expect(
          await Promise.all(
            nodes.map((node) => node.set(key, 'elsewhere', 'PX', 60_000, 'NX')),
          ),
        ).toEqual(nodes.map(() => 'OK'));
      const [replica] = await replicas(runId, { MIN_HOLD_MS: '500' }, [0]);
      await waitUntil(
        'three attempts of each job',
        async () => {
          for (const job of JOBS)
            if ((await read(runId, job)).attempts.length < 3) return undefined;
          return true;
        },
        20_000,
      );
      await stopped([replica]);

      for (const job of JOBS) {
        const record = await read(runId, job);
        expect(record.runs.size).toBe(0);
        expect(new Set(record.attempts.map((x) => x.outcome))).toEqual(
          new Set(['skipped']),
        );
      }
      expect(linesAt(replica.output(), 'ERROR')).toEqual([]);
      // Skipping did not take or free the other holder's lock.
      for (const key of keys)
        expect(await Promise.all(nodes.map((node) => node.get(key)))).toEqual(
          nodes.map(() => 'elsewhere'),
        );
    } finally {
      await Promise.all(nodes.map((node) => node.quit()));
    }
  });

  it('keeps a tick locked for minHold when the replica that ran it shuts down (rolling restart)', async () => {
    const runId = `restart-${run}`;
    const minHold = 900;
    // The first replica runs every tick (the second is 500 ms behind) and
    // sends itself SIGTERM right after its second run.
    const [a, b] = await replicas(
      runId,
      { MIN_HOLD_MS: String(minHold) },
      [0, 500],
      [{ STOP_AFTER_RUNS: '2' }, {}],
    );
    const exit = await a.stop(30_000, false);
    const readAt = Date.now();
    const nodes = urls.map((url) => new Redis(url));
    let leases: number[];
    try {
      leases = await Promise.all(
        nodes.map((node) => node.pttl(`lock:${runId}:cron-report`)),
      );
    } finally {
      await Promise.all(nodes.map((node) => node.quit()));
    }
    expect(exit).toEqual({ code: 0, signal: null, killed: false });
    const closedAt = Number(/closed \d+ at (\d+)/.exec(a.output())![1]);
    const ran = (await read(runId, 'cron-report')).attempts
      .filter((x) => x.pid === a.pid && x.outcome === 'ran')
      .at(-1)!;
    const second = await waitUntil(
      "the second replica's attempt at that tick",
      async () =>
        (await read(runId, 'cron-report')).attempts.find(
          (x) => x.pid === b.pid && x.tick === ran.tick,
        ),
      5_000,
    );
    await stopped([b]);
    const runs = (await read(runId, 'cron-report')).runs.get(ran.tick);
    console.log(
      `restart: first replica closed ${closedAt - ran.at} ms after its run; lock pttl on the nodes ${readAt - ran.at} ms after it ${JSON.stringify(leases)}; second replica ${second.outcome} ${second.at - ran.at} ms after it; runs of that tick ${runs}`,
    );
    // The second replica tried after the first had closed: its skip shows
    // the lock outlived app.close().
    expect(closedAt).toBeLessThan(second.at);
    expect(second.outcome).toBe('skipped');
    expect(runs).toBe(1);
    // Left to expire on the nodes with at most the rest of minHold (read
    // in time on a machine that is not too slow to tell).
    if (readAt - ran.at < minHold - 100)
      expect(
        leases.filter((ms) => ms > 0 && ms <= minHold).length,
      ).toBeGreaterThanOrEqual(2);
  });
});
