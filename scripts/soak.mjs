// `npm run soak -- [--minutes=3]`: a soak of the built package (dist/) as
// users load it (`nestjs-redlock/core`, `nestjs-redlock`), bounded by its
// argument, on redis-server nodes of its own on 127.0.0.1
// (scripts/redis-nodes.mjs). One process runs a realistic mix on three
// instances (two `Redlock` "replicas" and a Nest application context with
// `LockService` and `@Locked`): uncontended acquire/release and tryAcquire
// on ever-new keys, multi-resource locks, contended keys with waiters
// (wake-on-release, in-process handoff, the nodes' wait queues), fencing on
// a bounded set of resources, `using()` under the watchdog, aborted waits
// and waitTimeout expiries. Every --every seconds it samples operations,
// distinct keys, the heap after a forced GC (new short operations held
// back until those running settled, so only what lives between operations
// is counted), active handles, connections and keys on the nodes, and
// event-loop delay. At the end: a herd of --waiters concurrent waiters on
// one key (all must settle within waitTimeout + --herd-bound ms), quit(),
// then what is left behind (keys, channels, connections, handles).
// Exits non-zero when something is left or grows, when the heap slope is
// clearly positive, on unexpected errors, or when failures that CPU
// starvation explains (lost leases, late nodes) exceed 0.1%.
//
// Options: --minutes=N (default 3; fractions allowed) --nodes=N (3)
//   --every=S (sample period, default 10 s) --waiters=N (5000)
//   --herd-wait=MS (2000) --herd-bound=MS (500)
//   --snapshots=DIR (heap snapshots at the end of the warm-up and of the
//   load, taken while quiet, for a diff in Chrome DevTools' Comparison view)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { setTimeout as sleep } from 'node:timers/promises';
import { scanKeys, startServers } from './redis-nodes.mjs';

// A forced GC before each heap reading needs --expose-gc: run again with it.
if (typeof globalThis.gc !== 'function') {
  const result = spawnSync(
    process.execPath,
    ['--expose-gc', ...process.execArgv, ...process.argv.slice(1)],
    { stdio: 'inherit' },
  );
  process.exit(result.status ?? 1);
}

const args = Object.fromEntries(
  process.argv
    .slice(2)
    .filter((a) => a.startsWith('--'))
    .map((a) => {
      const [k, v] = a.slice(2).split('=');
      return [k, v ?? 'true'];
    }),
);
const num = (name, fallback) => {
  const v = Number(args[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0)
    throw new Error(`--${name}: not a number: ${args[name]}`);
  return v;
};
const cfg = {
  minutes: num('minutes', 3),
  nodes: Math.max(1, Math.round(num('nodes', 3))),
  every: Math.max(1, num('every', 10)),
  waiters: Math.round(num('waiters', 5000)),
  herdWait: num('herd-wait', 2000),
  herdBound: num('herd-bound', 500),
  snapshots: args.snapshots,
};
const RUN_MS = cfg.minutes * 60_000;
// Heap samples of the first fifth of the run (at least 30 s) are warm-up
// (JIT, inline caches, connection buffers) and left out of the slope.
const WARMUP_MS = Math.min(RUN_MS / 2, Math.max(30_000, RUN_MS / 5));
// A heap slope fails the run only above this many KB per 10^5 operations
// (1 byte per operation): a leak of one ~100-byte object (a Map entry with
// its key string, a closure) on 1% of operations is above it, while a
// bounded structure of 1 MB filling up during a default run (about 10^6
// operations) is at most at it, and noise is judged by the standard error.
const SLOPE_LIMIT_KB = 100;

// Hard bound: the run, the drain, the herd and the shutdown, plus slack.
const HARD_MS = RUN_MS + 60_000 + cfg.herdWait + 60_000;
const t0 = performance.now();
const hard = setTimeout(() => {
  console.error(
    `soak: hard time bound (${(HARD_MS / 1000).toFixed(0)} s) reached; exiting`,
  );
  for (const s of servers) s.child?.kill('SIGKILL');
  process.exit(3);
}, HARD_MS);
const secs = () => ((performance.now() - t0) / 1000).toFixed(0).padStart(5);
const log = (msg) => console.log(`[${secs()} s] ${msg}`);
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const mb = (bytes) => (bytes / 2 ** 20).toFixed(1);

await import('reflect-metadata');
const { Injectable, Module } = await import('@nestjs/common');
const { NestFactory } = await import('@nestjs/core');
const core = await import('nestjs-redlock/core');
const nest = await import('nestjs-redlock');
const { Redlock, LockNotAcquiredError, LockLostError } = core;
const { RedlockModule, LockService, Locked } = nest;

log(
  `soak: ${cfg.minutes} min on ${cfg.nodes} redis-server nodes, samples every ${cfg.every} s`,
);
const servers = await startServers(cfg.nodes);
const urls = servers.map((s) => s.url);
const admin = servers.map((s) => s.client());
for (const c of admin) c.on('error', () => undefined);
await Promise.all(admin.map((c) => c.ping()));

// The histogram records the time between the ticks of a 10 ms timer: the
// delay is what exceeds 10 ms.
const ELD_MS = 10;
const eld = monitorEventLoopDelay({ resolution: ELD_MS });
eld.enable();

// --- what the nodes and the process hold -----------------------------------

const connections = async () =>
  (await Promise.all(admin.map((c) => c.client('LIST')))).map(
    (list) => String(list).trim().split('\n').filter(Boolean).length,
  );
const dbsize = async () =>
  (await Promise.all(admin.map((c) => c.dbsize()))).reduce((a, b) => a + b, 0);
const channels = async () =>
  Promise.all(
    admin.map(async (c) => ({
      channels: await c.call('PUBSUB', 'CHANNELS', '*'),
      shard: await c.call('PUBSUB', 'SHARDCHANNELS', '*'),
    })),
  );
const handles = () => {
  const byType = {};
  for (const type of process.getActiveResourcesInfo())
    byType[type] = (byType[type] ?? 0) + 1;
  return byType;
};
const total = (byType) => Object.values(byType).reduce((a, b) => a + b, 0);
const tcp = (byType) =>
  Object.entries(byType)
    .filter(([type]) => /TCP/.test(type))
    .reduce((a, [, n]) => a + n, 0);
const heap = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage();
};

const before = {
  conns: await connections(),
  handles: handles(),
  mem: heap(),
};

// --- the application ---------------------------------------------------------

const a = new Redlock({ clients: urls });
const b = new Redlock({ clients: urls });

class OrdersService {
  // A fresh order id per call, or one of a few hot ones (contended).
  async pay(id) {
    const lock = LockService.current();
    if (!lock?.isHeld) throw new Error(`@Locked ran pay(${id}) without a lock`);
    await new Promise((resolve) => setImmediate(resolve));
    return id;
  }

  // Fenced, on a bounded set of SKUs (fencing counters never expire).
  async reserve(skus) {
    const lock = LockService.current();
    if (lock?.fencingTokens?.size !== new Set(skus).size)
      throw new Error('reserve() without a token per SKU');
    return skus.length;
  }
}
const descriptor = (name) =>
  Object.getOwnPropertyDescriptor(OrdersService.prototype, name);
Object.defineProperty(
  OrdersService.prototype,
  'pay',
  Locked('order:<0>', { waitTimeout: 3000 })(
    OrdersService.prototype,
    'pay',
    descriptor('pay'),
  ),
);
Object.defineProperty(
  OrdersService.prototype,
  'reserve',
  Locked('sku:<0.*>', { waitTimeout: 3000, fencing: true })(
    OrdersService.prototype,
    'reserve',
    descriptor('reserve'),
  ),
);
Injectable()(OrdersService);
class AppModule {}
Module({
  imports: [RedlockModule.forRoot({ clients: urls })],
  providers: [OrdersService],
})(AppModule);
const app = await NestFactory.createApplicationContext(AppModule, {
  logger: ['error', 'warn'],
});
const orders = app.get(OrdersService);
const service = app.get(LockService);
await Promise.all([a.ready(), b.ready()]);

// --- the workload ------------------------------------------------------------

const ops = {}; // outcome counts by kind
const unexpected = []; // the first few unexpected errors
let unexpectedCount = 0;
// Failures that CPU starvation of this process or of the nodes explains (a
// node answering after nodeTimeout, a lease running out while the event
// loop stalled): counted apart, and failing the run only above 0.1%.
let timingCount = 0;
const TIMING_LIMIT = 0.001;
let operations = 0;
let fresh = 0; // ever-new resources used (each a distinct key)
const POOLS = { hot: 8, multi: 16, slow: 2, orderHot: 4, sku: 6 };
const POOL_KEYS = Object.values(POOLS).reduce((x, y) => x + y, 0);
const FENCED = POOLS.hot + POOLS.sku; // resources that ever get a fencing counter
const newKey = (prefix) => `${prefix}:${fresh++}`;
const pick = (n) => Math.floor(Math.random() * n);
const count = (kind) => {
  ops[kind] = (ops[kind] ?? 0) + 1;
  operations++;
};
const ABORT = new Error('soak: wait aborted');
const NULL = Symbol('tryAcquire: held');
/** How an operation ended: expected outcomes, timing failures, the rest. */
const outcome = (error) => {
  if (error === ABORT) return 'aborted';
  if (error instanceof LockNotAcquiredError)
    return error.reason === 'busy'
      ? 'busy'
      : error.reason === 'closed'
        ? undefined
        : `timing: ${error.reason}`;
  if (error instanceof LockLostError) return 'timing: lost';
  return undefined;
};
const timingSeen = new Set(); // the first message of each kind, for the log
let inFlight = 0; // short operations running (the sampler waits for them)
let gate; // set while the sampler quiesces the short operations
async function op(kind, fn, long = false) {
  if (!long) {
    while (gate) await gate.promise;
    inFlight++;
  }
  try {
    // A tryAcquire that found the key held returns NULL.
    count((await fn()) === NULL ? `${kind} (null)` : kind);
  } catch (error) {
    const how = outcome(error);
    if (how?.startsWith('timing')) {
      timingCount++;
      if (!timingSeen.has(how) && timingSeen.size < 10) {
        timingSeen.add(how);
        log(`${kind}: ${how}: ${error.message}`);
      }
    }
    if (how) count(`${kind} (${how})`);
    else {
      count(`${kind} (unexpected)`);
      unexpectedCount++;
      if (unexpected.length < 5)
        unexpected.push(`${kind}: ${error?.stack ?? error}`);
    }
  } finally {
    if (!long && --inFlight === 0) gate?.drained();
  }
}
const hold = (ms) => (ms > 0 ? sleep(ms) : new Promise(setImmediate));

let running = true;
const loops = [];
const loop = (times, body) => {
  for (let i = 0; i < times; i++)
    loops.push(
      (async () => {
        while (running) await body(i);
      })(),
    );
};

// Uncontended, ever-new keys: acquire/release, tryAcquire, 3 resources.
for (const [lib, n] of [
  [a, 10],
  [b, 4],
])
  loop(n, async () => {
    const r = Math.random();
    if (r < 0.2)
      await op('fresh tryAcquire', async () => {
        const lock = await lib.tryAcquire(newKey('f'));
        if (!lock) throw new Error('tryAcquire of a new key returned null');
        await lock.release();
      });
    else if (r < 0.3)
      await op('fresh multi', async () => {
        const lock = await lib.acquire([newKey('f'), newKey('f'), newKey('f')]);
        await lock.release();
      });
    else
      await op('fresh acquire', async () => {
        await (await lib.acquire(newKey('f'))).release();
      });
  });
loop(3, () => op('@Locked fresh', () => orders.pay(`o${fresh++}`)));

// Contended: a few hot keys locked from all three instances.
const hotKey = () => `hot:${pick(POOLS.hot)}`;
const contended = async (lib) => {
  const r = Math.random();
  if (r < 0.55)
    await op('hot acquire', async () => {
      const lock = await lib.acquire(hotKey(), {
        waitTimeout: 3000,
        fencing: Math.random() < 0.2,
      });
      await hold(pick(3));
      await lock.release();
    });
  else if (r < 0.7)
    await op('hot tryAcquire', async () => {
      const lock = await lib.tryAcquire(hotKey());
      if (!lock) return NULL;
      await lock.release();
    });
  else if (r < 0.8)
    await op('hot wait', async () => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(ABORT), 1 + pick(20));
      try {
        const lock = await lib.acquire(hotKey(), {
          waitTimeout: 3000,
          signal: controller.signal,
        });
        await lock.release();
      } finally {
        clearTimeout(timer);
      }
    });
  else if (r < 0.9)
    await op('hot short wait', async () => {
      const lock = await lib.acquire(hotKey(), { waitTimeout: 1 + pick(30) });
      await lock.release();
    });
  else
    await op('hot multi', async () => {
      const first = pick(POOLS.hot);
      const lock = await lib.acquire(
        [
          `hot:${first}`,
          `hot:${(first + 1 + pick(POOLS.hot - 1)) % POOLS.hot}`,
          `m:${pick(POOLS.multi)}`,
        ],
        { waitTimeout: 3000 },
      );
      await hold(pick(2));
      await lock.release();
    });
};
loop(6, () => contended(a));
loop(6, () => contended(b));
loop(3, () => contended(service));
loop(2, () =>
  op('@Locked hot', () => orders.pay(`hot${pick(POOLS.orderHot)}`)),
);
loop(2, () =>
  op('@Locked fenced', () =>
    orders.reserve([`s${pick(POOLS.sku)}`, `s${pick(POOLS.sku)}`]),
  ),
);

// Longer sections under the watchdog (ttl 2 s: extended every 667 ms),
// 1.5 to 5 s each.
for (const lib of [a, b, service])
  loop(1, () =>
    op(
      'watchdog run',
      () =>
        (lib === service ? lib.run : lib.using).call(
          lib,
          newKey('w'),
          async (lock) => {
            await sleep(1500 + pick(3500));
            if (!lock.isHeld) throw new Error('watched lock not held');
          },
          { ttl: 2000 },
        ),
      true,
    ),
  );
// Slow holders and waiters whose waitTimeout runs out.
loop(POOLS.slow, (i) =>
  op(
    'slow holder',
    () =>
      a.using(`slow:${i}`, () => sleep(1000 + pick(1000)), {
        ttl: 2000,
        waitTimeout: 5000,
      }),
    true,
  ),
);
loop(2, () =>
  op('slow waiter', async () => {
    const lock = await b.acquire(`slow:${pick(POOLS.slow)}`, {
      waitTimeout: 50 + pick(250),
    });
    await lock.release();
  }),
);

// --- sampling ----------------------------------------------------------------

const samples = [];
let snapshotted = false;
/**
 * Holds new short operations back and waits (up to 3 s) until those
 * running have settled, so that the heap is read with only what the
 * library retains between operations (and the few long sections) alive.
 */
async function quiesce() {
  let drained;
  const done = new Promise((resolve) => (drained = resolve));
  let release;
  gate = { promise: new Promise((resolve) => (release = resolve)), drained };
  const since = performance.now();
  if (inFlight > 0) {
    const timeout = new AbortController();
    await Promise.race([
      done,
      sleep(3000, undefined, { signal: timeout.signal }).catch(() => {}),
    ]);
    timeout.abort();
  }
  return {
    pause: performance.now() - since,
    left: inFlight,
    resume: () => {
      gate = undefined;
      release();
    },
  };
}
async function sample() {
  const ms = (ns) => Math.max(0, ns / 1e6 - ELD_MS);
  const delay = {
    p50: ms(eld.percentile(50)),
    p99: ms(eld.percentile(99)),
    max: ms(eld.max),
  };
  const quiet = await quiesce();
  const mem = heap();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((sp) => [sp.space_name, sp.space_used_size]),
  );
  const steadyNow = performance.now() - t0 >= WARMUP_MS;
  const lastOne = started + RUN_MS - performance.now() < cfg.every * 500;
  if (cfg.snapshots && steadyNow && (!snapshotted || lastOne)) {
    snapshotted = true;
    const file = join(cfg.snapshots, `soak-${secs().trim()}s.heapsnapshot`);
    log(`heap snapshot: ${writeHeapSnapshot(file)}`);
    globalThis.gc();
  }
  quiet.resume();
  eld.reset(); // the forced GC's pause is ours, not the workload's
  const h = handles();
  const s = {
    t: (performance.now() - t0) / 1000,
    ops: operations,
    keys: fresh + POOL_KEYS,
    heap: mem.heapUsed,
    spaces,
    pause: quiet.pause,
    left: quiet.left,
    rss: mem.rss,
    handles: total(h),
    tcp: tcp(h),
    conns: (await connections()).reduce((x, y) => x + y, 0),
    redisKeys: await dbsize(),
    ...delay,
  };
  samples.push(s);
  const prev = samples.at(-2);
  const rate = prev ? (s.ops - prev.ops) / (s.t - prev.t) : 0;
  log(
    `ops ${fmt(s.ops)} (${fmt(rate)}/s), keys ${fmt(s.keys)}, heap ${mb(s.heap)} MB ` +
      `(quiet after ${s.pause.toFixed(0)} ms, ${s.left} short ops left), ` +
      `handles ${s.handles} (tcp ${s.tcp}), conns ${s.conns}, redis keys ${s.redisKeys}, ` +
      `loop delay p50/p99/max ${s.p50.toFixed(1)}/${s.p99.toFixed(1)}/${s.max.toFixed(1)} ms`,
  );
}

const started = performance.now();
eld.reset();
for (let next = cfg.every * 1000; next <= RUN_MS; next += cfg.every * 1000) {
  await sleep(Math.max(0, started + next - performance.now()));
  await sample();
}
running = false;
await Promise.all(loops);
log(`workload stopped: ${fmt(operations)} operations`);

// --- the herd: many concurrent waiters on one key ------------------------------

async function herd() {
  // A holder keeps the key for half the waitTimeout; then each waiter that
  // gets it holds it HERD_HOLD ms, so a few hundred get it and the rest time
  // out together at the end of their waitTimeout.
  const W = cfg.herdWait;
  const HERD_HOLD = 5;
  const holder = await a.tryAcquire('herd', { ttl: 30_000 });
  if (!holder) throw new Error('herd: key busy');
  const libs = [a, b, service];
  const outcomes = { acquired: 0, busy: 0, other: 0, unsettled: cfg.waiters };
  let worst = -Infinity; // settle time minus waitTimeout, of those timed out
  let slowest = 0; // settle time of any waiter
  const waits = Array.from({ length: cfg.waiters }, async (_, i) => {
    const start = performance.now();
    try {
      const lock = await libs[i % 3].acquire('herd', {
        waitTimeout: W,
        ttl: 5000,
      });
      outcomes.acquired++;
      await sleep(HERD_HOLD);
      await lock.release();
    } catch (error) {
      if (error instanceof LockNotAcquiredError && error.reason === 'busy') {
        outcomes.busy++;
        worst = Math.max(worst, performance.now() - start - W);
      } else {
        outcomes.other++;
        if (unexpected.length < 5) unexpected.push(`herd: ${error?.stack}`);
      }
    }
    slowest = Math.max(slowest, performance.now() - start);
    outcomes.unsettled--;
  });
  await sleep(W / 2);
  await holder.release();
  const guard = new AbortController();
  await Promise.race([
    Promise.all(waits),
    sleep(W + 30_000, undefined, { signal: guard.signal }).catch(() => {}),
  ]);
  guard.abort();
  return { ...outcomes, worst, slowest };
}
const herdResult = cfg.waiters > 0 ? await herd() : undefined;
if (herdResult)
  log(
    `herd: ${cfg.waiters} waiters, waitTimeout ${cfg.herdWait} ms: ${herdResult.acquired} acquired, ` +
      `${herdResult.busy} timed out, ${herdResult.other} other, ${herdResult.unsettled} unsettled, ` +
      `worst overshoot ${herdResult.worst.toFixed(0)} ms, slowest ${herdResult.slowest.toFixed(0)} ms`,
  );

// --- shutdown and what is left -------------------------------------------------

const stats = { a: a.stats, b: b.stats, nest: service.redlock.stats };
await app.close();
await Promise.all([a.quit(), b.quit()]);
let connsAfter = await connections();
for (let i = 0; i < 20 && connsAfter.some((n, j) => n > before.conns[j]); i++) {
  await sleep(100);
  connsAfter = await connections();
}
/** Keys under both prefixes on every node, fencing counters apart. */
async function leftBehind() {
  const keys = [];
  let fence = 0;
  for (const c of admin)
    for (const key of [
      ...(await scanKeys(c, `${a.keyPrefix}*`)),
      ...(await scanKeys(c, `${a.metaPrefix}*`)),
    ]) {
      if (key.startsWith(`${a.metaPrefix}fence:`)) fence++;
      else keys.push({ key, pttl: await c.pttl(key) });
    }
  return { keys, fence };
}
const left = await leftBehind();
const fenceCounters = left.fence;
// Keys still there at once (a release that missed its nodes under load
// leaves its keys to their lease): listed, then looked for again once
// their leases are over (15 s at most).
let leftLater = left.keys;
let waitedMs = 0;
if (left.keys.length && left.keys.every((k) => k.pttl > 0)) {
  waitedMs = Math.min(15_000, Math.max(...left.keys.map((k) => k.pttl)) + 200);
  await sleep(waitedMs);
  leftLater = (await leftBehind()).keys;
}
const leftKeys = left.keys.map((k) => `${k.key} (pttl ${k.pttl})`);
const leftChannels = (await channels()).flatMap((n) => [
  ...n.channels,
  ...n.shard,
]);
const after = { handles: handles(), mem: heap() };
clearTimeout(hard);
const handleDiff = Object.keys({ ...before.handles, ...after.handles })
  .filter((k) => (before.handles[k] ?? 0) !== (after.handles[k] ?? 0))
  .map((k) => `${k} ${before.handles[k] ?? 0} -> ${after.handles[k] ?? 0}`);

// --- the figures -----------------------------------------------------------------

/** Least squares y = a + b x with the standard error of b. */
function fit(points) {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.x - mx) ** 2;
    sxy += (p.x - mx) * (p.y - my);
  }
  const slope = sxy / sxx;
  const ssr = points.reduce(
    (s, p) => s + (p.y - my - slope * (p.x - mx)) ** 2,
    0,
  );
  return { slope, se: Math.sqrt(ssr / (n - 2) / sxx), n };
}
const steady = samples.filter((s) => s.t * 1000 >= WARMUP_MS);
const slope =
  steady.length >= 3
    ? fit(steady.map((s) => ({ x: s.ops / 1e5, y: s.heap / 1024 })))
    : undefined;
const thirds = Math.max(1, Math.floor(steady.length / 3));
const maxOf = (list, f) => Math.max(...list.map(f));
const first = steady.slice(0, thirds);
const last = steady.slice(-thirds);
const median = (values) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[sorted.length >> 1];
};
const elapsed = (performance.now() - started) / 1000;
const tcpCounts = new Set(samples.map((s) => s.tcp));
const connCounts = new Set(samples.map((s) => s.conns));

const failures = [];
if (leftLater.length) failures.push(`${leftLater.length} keys left`);
if (fenceCounters > FENCED * cfg.nodes)
  failures.push(`${fenceCounters} fencing counters (> ${FENCED * cfg.nodes})`);
if (leftChannels.length) failures.push(`${leftChannels.length} channels left`);
if (connsAfter.some((n, i) => n !== before.conns[i]))
  failures.push('connections left');
if (handleDiff.length) failures.push('handles left');
if (tcpCounts.size > 1 || connCounts.size > 1)
  failures.push('sockets changed during the run');
if (
  steady.length &&
  maxOf(last, (s) => s.handles) > maxOf(first, (s) => s.handles) * 1.5 + 10
)
  failures.push('handles grew');
if (slope && slope.slope > 3 * slope.se && slope.slope > SLOPE_LIMIT_KB)
  failures.push('heap grows');
if (!slope) failures.push('too few samples for a heap slope (run longer)');
if (unexpectedCount > 0) failures.push(`${unexpectedCount} unexpected errors`);
if (timingCount > TIMING_LIMIT * operations)
  failures.push(`${timingCount} timing failures (above 0.1%)`);
if (herdResult && (herdResult.unsettled || herdResult.other))
  failures.push('herd: waiters unsettled or failed otherwise');
if (herdResult && herdResult.worst > cfg.herdBound)
  failures.push(`herd: overshoot above ${cfg.herdBound} ms`);

const rows = [
  [
    'duration',
    `${(elapsed / 60).toFixed(1)} min, ${cfg.nodes} nodes, node ${process.version}`,
  ],
  ['operations', `${fmt(operations)} (${fmt(operations / elapsed)}/s)`],
  ['distinct keys', fmt(fresh + POOL_KEYS)],
  [
    'heap slope',
    slope
      ? `${slope.slope.toFixed(1)} ± ${slope.se.toFixed(1)} KB per 10^5 operations ` +
        `(${slope.n} samples after ${(WARMUP_MS / 1000).toFixed(0)} s warm-up; fails above 3 SE and ${SLOPE_LIMIT_KB} KB)`
      : 'n/a',
  ],
  [
    'heap after GC',
    `${mb(before.mem.heapUsed)} MB before, ${steady.length ? mb(steady[0].heap) : '-'} MB after warm-up, ` +
      `${mb(samples.at(-1)?.heap ?? 0)} MB at the end of the load, ${mb(after.mem.heapUsed)} MB after quit()`,
  ],
  [
    'heap growth by space (warm-up end to load end)',
    steady.length
      ? Object.keys(steady[0].spaces)
          .map((k) => [
            k,
            (steady.at(-1).spaces[k] - steady[0].spaces[k]) / 1024,
          ])
          .filter(([, kb]) => Math.abs(kb) >= 1)
          .map(([k, kb]) => `${k} ${kb >= 0 ? '+' : ''}${kb.toFixed(0)} KB`)
          .join(', ') || 'none above 1 KB'
      : 'n/a',
  ],
  [
    'rss',
    `${mb(before.mem.rss)} MB before, ${mb(samples.at(-1)?.rss ?? 0)} MB at the end of the load`,
  ],
  [
    'active handles',
    `${total(before.handles)} before, ${Math.min(...samples.map((s) => s.handles))}-${maxOf(samples, (s) => s.handles)} ` +
      `during (sockets ${[...tcpCounts].join(', ')}), ${total(after.handles)} after quit()` +
      (handleDiff.length ? ` (${handleDiff.join(', ')})` : ''),
  ],
  [
    'connections (all nodes)',
    `${before.conns.reduce((x, y) => x + y, 0)} before (our admin client), ` +
      `${[...connCounts].join(', ')} during, ${connsAfter.reduce((x, y) => x + y, 0)} after quit()`,
  ],
  [
    'redis keys during the load',
    `${Math.min(...samples.map((s) => s.redisKeys))}-${maxOf(samples, (s) => s.redisKeys)}`,
  ],
  [
    'keys left after quit()',
    `${leftKeys.length}${leftKeys.length ? `: ${leftKeys.slice(0, 5).join(', ')}; ${leftLater.length} still there after ${waitedMs} ms` : ''} ` +
      `(+ ${fenceCounters} fencing counters, kept by design, for ${FENCED} fenced resources on ${cfg.nodes} nodes)`,
  ],
  [
    'channels left (PUBSUB CHANNELS, SHARDCHANNELS)',
    String(leftChannels.length),
  ],
  [
    `event-loop delay (beyond a ${ELD_MS} ms timer, per sample)`,
    `p50 median ${median(samples.map((s) => s.p50)).toFixed(1)} ms, ` +
      `p99 median ${median(samples.map((s) => s.p99)).toFixed(1)} ms / worst ${maxOf(samples, (s) => s.p99).toFixed(1)} ms, ` +
      `max ${maxOf(samples, (s) => s.max).toFixed(1)} ms`,
  ],
  [
    `herd (${fmt(cfg.waiters)} waiters, waitTimeout ${cfg.herdWait} ms)`,
    herdResult
      ? `${herdResult.acquired} acquired, ${herdResult.busy} timed out, ${herdResult.other} other, ` +
        `${herdResult.unsettled} unsettled; timed out at most ${herdResult.worst.toFixed(0)} ms after waitTimeout (bound ${cfg.herdBound}), ` +
        `slowest settled after ${herdResult.slowest.toFixed(0)} ms`
      : 'skipped',
  ],
  [
    'locks acquired (stats)',
    Object.entries(stats)
      .map(([k, s]) => `${k} ${fmt(s.acquired)} (${fmt(s.waited)} waited)`)
      .join(', '),
  ],
  [
    'timing failures (load)',
    `${timingCount} (lease lost or nodes late while this 2-core machine was starved; fails above 0.1% of operations)`,
  ],
  ['unexpected errors', String(unexpectedCount)],
];
console.log('\n| soak | |\n| --- | --- |');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
console.log('\n| operation | count |\n| --- | --- |');
for (const [k, v] of Object.entries(ops).sort())
  console.log(`| ${k} | ${fmt(v)} |`);
for (const u of unexpected) console.log(`\nunexpected: ${u}`);

await Promise.all(admin.map((c) => c.quit()));
await Promise.all(servers.map((s) => s.stop()));
eld.disable();
console.log(
  failures.length ? `\nsoak: FAIL (${failures.join('; ')})` : '\nsoak: pass',
);
process.exit(failures.length ? 1 : 0);
