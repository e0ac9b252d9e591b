// The measured scenarios. Each takes a library adapter (see libs.mjs) and
// returns plain numbers; every loop is bounded by time and by count.
import { cpuSince, percentile, sent, sleep } from './util.mjs';

const now = () => performance.now();
/** A time every worker process reads alike (ms since the epoch, sub-ms). */
const shared = (t) => performance.timeOrigin + t;

/**
 * 1. Sequential lock+unlock of distinct keys, the libraries taking turns:
 * every library of `libs` ({ name: lib }) runs a block of `blockPairs`
 * pairs in turn (who goes first rotates), until each has run about
 * `durationMs`. A sequential pair is a few hundred µs of
 * latency on a machine the nodes share with the client, so load that comes
 * and goes over seconds (another process, the nodes' own housekeeping) moved
 * whole 1 s runs by 20 % or more; blocks of tens of ms spread it over every
 * library alike. Returns { name: pairs/s and the p50/p99 of acquire and
 * release }.
 */
export async function sequentialTakingTurns(libs, { durationMs, blockPairs = 100, maxBlocks = 2_000, tag }) {
  const names = Object.keys(libs);
  const runs = Object.fromEntries(names.map((name) => [name, { acquireMs: [], releaseMs: [], elapsed: 0, pairs: 0, cpuUs: 0 }]));
  const total = () => names.reduce((sum, name) => sum + runs[name].elapsed, 0);
  for (let block = 0; block < maxBlocks && total() < durationMs * names.length; block++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(block + k) % names.length];
      const lib = libs[name];
      const run = runs[name];
      const start = now();
      // Only this library works during its block (the others are idle).
      const cpu0 = process.cpuUsage();
      for (let j = 0; j < blockPairs; j++) {
        const t0 = now();
        const handle = await lib.acquire(`seq:${tag}:${name}:${run.pairs++}`);
        const t1 = now();
        await lib.release(handle);
        run.acquireMs.push(t1 - t0);
        run.releaseMs.push(now() - t1);
      }
      run.elapsed += now() - start;
      run.cpuUs += cpuSince(cpu0);
    }
  }
  return Object.fromEntries(
    names.map((name) => {
      const { acquireMs, releaseMs, elapsed, pairs, cpuUs } = runs[name];
      acquireMs.sort((a, b) => a - b);
      releaseMs.sort((a, b) => a - b);
      return [
        name,
        {
          pairsPerSec: (pairs / elapsed) * 1000,
          acquireP50: percentile(acquireMs, 50),
          acquireP99: percentile(acquireMs, 99),
          releaseP50: percentile(releaseMs, 50),
          releaseP99: percentile(releaseMs, 99),
          cpuUsPerPair: cpuUs / pairs,
        },
      ];
    }),
  );
}

/** 2. `workers` concurrent loops on distinct keys. */
export async function parallel(lib, { durationMs, workers = 64, maxPairs = 500_000, tag }) {
  let pairs = 0;
  const commands0 = sent.commands;
  const cpu0 = process.cpuUsage();
  const start = now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; now() < end && pairs < maxPairs; i++) {
        const handle = await lib.acquire(`par:${tag}:${w}:${i}`);
        await lib.release(handle);
        pairs++;
      }
    }),
  );
  const elapsed = now() - start;
  return {
    pairsPerSec: (pairs / elapsed) * 1000,
    cpuUsPerPair: cpuSince(cpu0) / pairs,
    commandsPerPair: (sent.commands - commands0) / pairs,
  };
}

/**
 * The loop of one contended worker: acquire the hot key, hold it 1 ms, release.
 * `enter`/`exit` detect two holders at once (a violation).
 */
export async function hotWorker(lib, { key, endAt, enter, exit }) {
  const waits = [];
  /** [asked, granted] of every acquisition, on the shared clock. */
  const grants = [];
  let gaveUps = 0;
  let violations = 0;
  while (Date.now() < endAt) {
    const t0 = now();
    let handle;
    try {
      handle = await lib.acquire(key);
    } catch {
      gaveUps++;
      continue;
    }
    const t1 = now();
    waits.push(t1 - t0);
    grants.push([shared(t0), shared(t1)]);
    if (!(await enter())) violations++;
    await sleep(1);
    await exit();
    await lib.release(handle);
  }
  return { waits, grants, gaveUps, violations };
}

/**
 * The order in which the lock went out against the order it was asked for.
 * `inOrder`: the share of grants that went to the caller that had waited
 * longest of those waiting at that moment (1 = first come, first served).
 * `maxOvertaken`: the most callers that asked later and got the lock first
 * while one caller waited (bounded = nobody starves).
 */
export function grantOrder(grants) {
  const byGrant = [...grants].sort((a, b) => a[1] - b[1]);
  let inOrder = 0;
  let maxOvertaken = 0;
  for (let i = 0; i < byGrant.length; i++) {
    const [asked] = byGrant[i];
    let first = true;
    // Still waiting when this one was granted, and asked earlier.
    for (let j = i + 1; j < byGrant.length && first; j++)
      if (byGrant[j][0] < asked) first = false;
    if (first) inOrder++;
    // Granted while this one waited, though asked after it.
    let overtaken = 0;
    for (let j = i - 1; j >= 0 && byGrant[j][1] > asked; j--)
      if (byGrant[j][0] > asked) overtaken++;
    maxOvertaken = Math.max(maxOvertaken, overtaken);
  }
  return {
    inOrder: byGrant.length ? inOrder / byGrant.length : undefined,
    maxOvertaken: byGrant.length ? maxOvertaken : undefined,
  };
}

/** Sums worker results into the contended figures. */
export function summarizeHot(results, elapsedMs, commands) {
  const waits = results.flatMap((r) => r.waits);
  const count = waits.length;
  const perWorker = results.map((r) => r.waits.length);
  return {
    csPerSec: (count / elapsedMs) * 1000,
    meanWaitMs: count ? waits.reduce((a, b) => a + b, 0) / count : undefined,
    maxWaitMs: count ? Math.max(...waits) : undefined,
    p99WaitMs: percentile(waits.sort((a, b) => a - b), 99),
    gaveUps: results.reduce((a, r) => a + r.gaveUps, 0),
    violations: results.reduce((a, r) => a + r.violations, 0),
    commandsPerCs: count ? commands / count : undefined,
    /** The least served worker's share relative to an equal share (1 = fair). */
    minShare: count ? Math.min(...perWorker) / (count / perWorker.length) : undefined,
    ...grantOrder(results.flatMap((r) => r.grants)),
  };
}

/** 3a. `workers` contended workers sharing this process (and one library instance). */
export async function hotInProcess(lib, { durationMs, workers = 16, tag }) {
  let inside = 0;
  const enter = async () => ++inside === 1;
  const exit = async () => {
    inside--;
  };
  const commands0 = sent.commands;
  const cpu0 = process.cpuUsage();
  const start = Date.now();
  const results = await Promise.all(
    Array.from({ length: workers }, () =>
      hotWorker(lib, { key: `hot:${tag}`, endAt: start + durationMs, enter, exit }),
    ),
  );
  const summary = summarizeHot(results, Date.now() - start, sent.commands - commands0);
  const count = results.reduce((sum, r) => sum + r.waits.length, 0);
  return { ...summary, cpuUsPerCs: cpuSince(cpu0) / Math.max(1, count) };
}

/**
 * 4. `count` locks held at once with the library's watchdog for `holdMs`:
 * client CPU (share of one core) and commands per second per node over
 * the steady window (acquire and release excluded).
 */
export async function held(lib, { count, holdMs, nodes, tag }) {
  let release;
  const until = new Promise((resolve) => {
    release = resolve;
  });
  let acquiredCount = 0;
  let failed = 0;
  const holds = [];
  const batch = 500;
  for (let i = 0; i < count; i += batch) {
    const acquired = [];
    for (let j = i; j < Math.min(count, i + batch); j++) {
      let signal;
      acquired.push(new Promise((resolve) => (signal = resolve)));
      const done = lib.hold(`held:${tag}:${j}`, until, () => {
        acquiredCount++;
        signal();
      });
      holds.push(
        done.then(
          (r) => r,
          () => {
            failed++;
            signal();
            return { lost: false, failed: true };
          },
        ),
      );
    }
    await Promise.all(acquired);
  }
  await sleep(200);
  const commands0 = sent.commands;
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await sleep(holdMs);
  const elapsed = now() - t0;
  const cpu = cpuSince(cpu0);
  const commands = sent.commands - commands0;
  release();
  const outcomes = await Promise.all(holds);
  return {
    locks: acquiredCount,
    cpuPercent: (cpu / 1000 / elapsed) * 100,
    commandsPerSecPerNode: (commands / (elapsed / 1000)) / nodes,
    /** Locks whose watchdog lost them while held. */
    lost: outcomes.filter((o) => o.lost).length,
    /** Acquires that failed in the burst (one attempt each, no wait). */
    failed,
  };
}
