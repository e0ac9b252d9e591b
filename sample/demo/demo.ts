// `npm run demo`: the same order burst against the sample app, first without
// the lock, then with it, on real Redis over real HTTP; prints the table and
// exits 0 only when the locked run sold exactly what was in stock.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startApp, type AppProcess } from './app-process.js';
import { fireOrders } from './burst.js';
import { demoRedis, type DemoRedis } from './redis-nodes.js';
import { oversold, table, unaccounted, type RunReport } from './report.js';
import { PSP_CONCURRENCY } from '../src/payments/psp-limit.js';
import { buildOrders, SEED } from './scenario.js';
import {
  catalogueTable,
  firePayments,
  paymentsTable,
  readWhileRepricing,
} from './shapes.js';

// Compiled to sample/dist/demo/demo.js; the repository root is three up.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ORDERS = Number(process.env.DEMO_ORDERS ?? 500);
const CONCURRENCY = Number(process.env.DEMO_CONCURRENCY ?? 250);
const PAYMENTS = Number(process.env.DEMO_PAYMENTS ?? 200);
// The provider's limit in the sample app, the semaphore's permits.
const PSP_PERMITS = PSP_CONCURRENCY;
const DEADLINE_MS = 90_000;

let redis: DemoRedis | undefined;
let app: AppProcess | undefined;
let replica: AppProcess | undefined;
let interrupted = false;
const prefix = `demo:${randomBytes(4).toString('hex')}:`;

async function main(): Promise<number> {
  const started = performance.now();
  console.log('nestjs-redlock demo: a flash sale that must not oversell\n');
  redis = await demoRedis(ROOT);
  console.log(`Redis:  ${redis.label}`);
  await checkReachable(redis.urls);
  app = await startApp(`${ROOT}sample/dist/src/main.js`, {
    REDIS_URLS: redis.urls.join(','),
    KEY_PREFIX: prefix,
  });
  console.log(`App:    sample app on ${app.baseUrl}`);
  console.log(
    `Stock:  ${[...SEED].map(([sku, n]) => `${sku} ${n}`).join(', ')}; ` +
      `${ORDERS} orders (${CONCURRENCY} in flight), a fifth of them multi-SKU\n`,
  );

  const runs: RunReport[] = [];
  for (const locking of ['off', 'on'] as const)
    runs.push(await run(app.baseUrl, locking));
  if (interrupted) return 130;

  console.log(`\n${table(runs)}\n`);
  const [, locked] = runs;
  const soldOk =
    oversold(locked) === 0 &&
    unaccounted(locked) === 0 &&
    locked.lowestStock >= 0 &&
    locked.burst.failed === 0;
  for (const r of runs)
    for (const failure of r.burst.failures)
      console.log(`  ${r.title}: unexpected answer: ${failure}`);
  console.log(
    soldOk
      ? `With the lock: sold exactly the stock, never below 0. Without it: ${oversold(runs[0])} units oversold.`
      : 'FAILED: the locked run oversold, lost an update or had errors.',
  );

  const shapesOk = await semaphoreAndReadWrite();
  if (interrupted) return 130;
  console.log(
    `\nDone in ${((performance.now() - started) / 1000).toFixed(1)} s.`,
  );
  return soldOk && shapesOk ? 0 : 1;
}

/**
 * Parts two and three, on two replicas of the app: payments to a provider
 * that takes at most PSP_PERMITS calls at once, without and with
 * `@Locked('psp', { permits })`; catalogue reads while it is repriced,
 * without and with the read/write lock.
 */
async function semaphoreAndReadWrite(): Promise<boolean> {
  replica = await startApp(`${ROOT}sample/dist/src/main.js`, {
    REDIS_URLS: redis!.urls.join(','),
    KEY_PREFIX: prefix,
  });
  const urls = [app!.baseUrl, replica.baseUrl];
  console.log(
    `\nPayments: ${PAYMENTS} payments over two replicas (${replica.baseUrl} too), ` +
      `${Math.min(CONCURRENCY, PAYMENTS)} in flight, to a provider that takes ${PSP_PERMITS} calls at once`,
  );
  const payments = [];
  for (const [title, limit] of [
    ['without semaphore', 'off'],
    [`permits: ${PSP_PERMITS}`, 'on'],
  ] as const) {
    if (interrupted) return false;
    payments.push(
      await firePayments(urls, title, limit, PAYMENTS, CONCURRENCY),
    );
  }
  console.log(`\n${paymentsTable(payments)}\n`);
  const [free, bounded] = payments;
  const paymentsOk =
    bounded.maxInFlight <= PSP_PERMITS &&
    bounded.charged === PAYMENTS &&
    bounded.failed === 0;
  for (const r of payments)
    for (const failure of r.failures)
      console.log(`  ${r.title}: unexpected answer: ${failure}`);
  console.log(
    paymentsOk
      ? `With the semaphore: at most ${bounded.maxInFlight} provider calls at once over both replicas (the limit is ${PSP_PERMITS}), none refused. Without it: ${free.maxInFlight} at once, ${free.refused} refused.`
      : `FAILED: with the semaphore the provider saw ${bounded.maxInFlight} calls at once (limit ${PSP_PERMITS}), or payments failed.`,
  );

  console.log(
    '\nCatalogue: 5 reprices of 50 items (one item at a time) while 16 clients read it',
  );
  const catalogue = [];
  for (const [title, locking] of [
    ['without lock', 'off'],
    ['read/write lock', 'on'],
  ] as const) {
    if (interrupted) return false;
    catalogue.push(
      await readWhileRepricing(urls, title, locking, {
        items: 50,
        reprices: 5,
        readers: 16,
      }),
    );
  }
  console.log(`\n${catalogueTable(catalogue)}\n`);
  const [torn, guarded] = catalogue;
  const catalogueOk =
    guarded.torn === 0 && guarded.reprices === 5 && guarded.failed === 0;
  for (const r of catalogue)
    for (const failure of r.failures)
      console.log(`  ${r.title}: unexpected answer: ${failure}`);
  console.log(
    catalogueOk
      ? `With the read/write lock: ${guarded.reads} reads, none of a half-repriced catalogue. Without it: ${torn.torn} of ${torn.reads}.`
      : 'FAILED: with the read/write lock a read saw a half-repriced catalogue, or calls failed.',
  );
  return paymentsOk && catalogueOk;
}

async function run(baseUrl: string, locking: 'on' | 'off'): Promise<RunReport> {
  const title = locking === 'on' ? 'with lock' : 'without lock';
  for (const [sku, quantity] of SEED)
    await call(baseUrl, 'PUT', `/stock/${sku}`, { quantity });
  const before = await stats(baseUrl);
  const watcher = watchStock(baseUrl);
  const burst = await fireOrders(baseUrl, buildOrders(ORDERS), {
    locking,
    concurrency: CONCURRENCY,
    onProgress: progress(title, ORDERS),
  });
  const lowestStock = await watcher.stop();
  const after = await stats(baseUrl);
  const stockLeft = new Map<string, number>();
  for (const sku of SEED.keys())
    stockLeft.set(sku, (await stockOf(baseUrl, sku)) ?? NaN);
  return {
    title,
    burst,
    seed: SEED,
    stockLeft,
    lowestStock: Math.min(lowestStock, ...stockLeft.values()),
    lockWaits: after.lockWaits - before.lockWaits,
    lockRetries: after.lockRetries - before.lockRetries,
  };
}

/** Polls every SKU's stock during the burst; `stop()` gives the lowest level seen. */
function watchStock(baseUrl: string) {
  let lowest = Infinity;
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const sku of SEED.keys()) {
        const level = await stockOf(baseUrl, sku);
        if (level !== undefined) lowest = Math.min(lowest, level);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return lowest;
    },
  };
}

function progress(title: string, total: number): (done: number) => void {
  const tty = process.stdout.isTTY;
  let shown = 0;
  return (done) => {
    if (interrupted) return;
    const step = Math.floor((done / total) * 20);
    if (tty) {
      if (step === shown && done !== total) return;
      shown = step;
      process.stdout.write(
        `\r  ${title.padEnd(12)} [${'#'.repeat(step).padEnd(20, '.')}] ${done}/${total}`,
      );
      if (done === total) process.stdout.write('\n');
    } else if (step >= shown + 5 || done === total) {
      shown = step;
      console.log(`  ${title}: ${done}/${total} orders answered`);
    }
  };
}

async function call(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
) {
  const res = await fetch(baseUrl + path, {
    method,
    headers: body ? { 'content-type': 'application/json' } : undefined,
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok)
    throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

async function stockOf(
  baseUrl: string,
  sku: string,
): Promise<number | undefined> {
  try {
    return Number((await call(baseUrl, 'GET', `/stock/${sku}`)).quantity);
  } catch {
    return undefined;
  }
}

async function stats(baseUrl: string) {
  const body = await call(baseUrl, 'GET', '/stats');
  return {
    lockWaits: Number(body.lockWaits),
    lockRetries: Number(body.lockRetries),
  };
}

/** Stops the app and the Redis servers we started; removes our keys from Redis we were given. */
async function cleanup(): Promise<void> {
  await replica?.stop().catch(() => undefined);
  replica = undefined;
  await app?.stop().catch(() => undefined);
  app = undefined;
  if (redis && process.env.REDIS_URLS) await removeKeys(redis.urls);
  await redis?.stop().catch(() => undefined);
  redis = undefined;
}

/** Fails fast, naming the node, instead of letting every request time out. */
async function checkReachable(urls: string[]): Promise<void> {
  for (const url of urls) {
    const client = new Redis(url, {
      lazyConnect: true,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    let cause: unknown;
    client.on('error', (error) => (cause = error));
    try {
      await client.connect();
      await client.ping();
    } catch (error) {
      const reason = (cause ?? error) as Error;
      throw new Error(`cannot reach Redis at ${url}: ${reason.message}`);
    } finally {
      client.disconnect();
    }
  }
}

async function removeKeys(urls: string[]): Promise<void> {
  for (const url of urls) {
    const client = new Redis(url, {
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(
          cursor,
          'MATCH',
          `${prefix}*`,
          'COUNT',
          500,
        );
        if (keys.length) await client.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    } catch {
      // best effort: keys under a random prefix do no harm
    } finally {
      client.disconnect();
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    interrupted = true;
    console.log(`\n${signal}: stopping the app and Redis...`);
    void cleanup().finally(() => process.exit(130));
  });

const deadline = setTimeout(() => {
  console.error(
    `\nThe demo took longer than ${DEADLINE_MS / 1000} s; stopping.`,
  );
  void cleanup().finally(() => process.exit(1));
}, DEADLINE_MS);

void main()
  .catch((error: unknown) => {
    console.error(
      '\nThe demo failed:',
      error instanceof Error ? error.message : error,
    );
    return 1;
  })
  .then(async (code) => {
    clearTimeout(deadline);
    await cleanup();
    process.exit(code);
  });
