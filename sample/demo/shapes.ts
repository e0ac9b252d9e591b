import { percentile } from './burst.js';

// The demo's second and third parts: payments through a provider that takes
// at most n calls at once, with and without the semaphore that keeps two
// replicas within it; and catalogue reads while it is repriced, with and
// without the read/write lock.

/** What a burst of payments got back, and what the provider saw. */
export interface PaymentsRun {
  title: string;
  sent: number;
  charged: number;
  /** 502 `PSP_REFUSED`: the provider was at its limit. */
  refused: number;
  /** 409 from the lock filter: no permit freed within the wait timeout. */
  lockBusy: number;
  failed: number;
  failures: string[];
  /** The most calls the provider had in flight at once. */
  maxInFlight: number;
  latencies: number[];
  durationMs: number;
}

/**
 * Sends `count` payments, `concurrency` at a time, alternating between the
 * replicas (`?limit=off`: without the semaphore), and reads what the
 * provider saw.
 */
export async function firePayments(
  urls: string[],
  title: string,
  limit: 'on' | 'off',
  count: number,
  concurrency: number,
): Promise<PaymentsRun> {
  const run: PaymentsRun = {
    title,
    sent: count,
    charged: 0,
    refused: 0,
    lockBusy: 0,
    failed: 0,
    failures: [],
    maxInFlight: 0,
    latencies: [],
    durationMs: 0,
  };
  await fetch(`${urls[0]}/payments/psp`, { method: 'DELETE' });
  const start = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const sent = performance.now();
      try {
        const res = await fetch(
          `${urls[i % urls.length]}/payments?limit=${limit}`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ orderId: `demo-${i}`, amount: 1999 }),
            signal: AbortSignal.timeout(30_000),
          },
        );
        const body = (await res.json()) as Record<string, unknown>;
        if (res.status === 201) run.charged++;
        else if (res.status === 502 && body.code === 'PSP_REFUSED')
          run.refused++;
        else if (res.status === 409 && typeof body.reason === 'string')
          run.lockBusy++;
        else unexpected(run, `${res.status} ${JSON.stringify(body)}`);
      } catch (error) {
        unexpected(run, String(error));
      }
      run.latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, worker),
  );
  run.durationMs = performance.now() - start;
  const psp = (await (await fetch(`${urls[0]}/payments/psp`)).json()) as {
    maxInFlight: number;
  };
  run.maxInFlight = psp.maxInFlight;
  return run;
}

/** Catalogue reads made while it was repriced, and what they saw. */
export interface CatalogueRun {
  title: string;
  reads: number;
  /** Reads that saw items of two versions: some repriced, some not. */
  torn: number;
  reprices: number;
  failed: number;
  failures: string[];
  readLatencies: number[];
  durationMs: number;
}

/**
 * Seeds `items` items, then reprices the catalogue `reprices` times (one
 * after another, alternating replicas) while `readers` clients read it in
 * a loop (`?locking=off`: without the read/write lock).
 */
export async function readWhileRepricing(
  urls: string[],
  title: string,
  locking: 'on' | 'off',
  options: { items: number; reprices: number; readers: number },
): Promise<CatalogueRun> {
  const run: CatalogueRun = {
    title,
    reads: 0,
    torn: 0,
    reprices: 0,
    failed: 0,
    failures: [],
    readLatencies: [],
    durationMs: 0,
  };
  const items = Array.from({ length: options.items }, (_, i) => ({
    sku: `item-${i}`,
    price: 1000 + i,
  }));
  await call(urls[0], 'PUT', '/catalogue', { items });
  const start = performance.now();
  let repricing = true;
  const readers = Array.from({ length: options.readers }, async (_, r) => {
    while (repricing) {
      const sent = performance.now();
      try {
        const view = await call(
          urls[r % urls.length],
          'GET',
          `/catalogue?locking=${locking}`,
        );
        run.reads++;
        if (view.consistent !== true) run.torn++;
      } catch (error) {
        unexpected(run, String(error));
      }
      run.readLatencies.push(performance.now() - sent);
    }
  });
  for (let i = 0; i < options.reprices; i++) {
    try {
      await call(
        urls[i % urls.length],
        'POST',
        `/catalogue/reprice?locking=${locking}`,
        { percent: 5 },
      );
      run.reprices++;
    } catch (error) {
      unexpected(run, String(error));
    }
  }
  repricing = false;
  await Promise.all(readers);
  run.durationMs = performance.now() - start;
  return run;
}

async function call(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: body ? { 'content-type': 'application/json' } : undefined,
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok)
    throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

function unexpected(
  run: { failed: number; failures: string[] },
  message: string,
): void {
  run.failed++;
  if (run.failures.length < 5) run.failures.push(message);
}

const ms = (value: number) => `${value.toFixed(0)} ms`;

/** The payments table, one column per run. */
export function paymentsTable(runs: PaymentsRun[]): string {
  return grid(runs, [
    ['payments sent (2 replicas)', (r) => String(r.sent)],
    ['charged (201)', (r) => String(r.charged)],
    ['refused by the provider (502)', (r) => String(r.refused)],
    ['refused, lock busy (409)', (r) => String(r.lockBusy)],
    ['other errors', (r) => String(r.failed)],
    ['MOST provider calls at once', (r) => String(r.maxInFlight)],
    ['latency p50', (r) => ms(percentile(r.latencies, 0.5))],
    ['latency p99', (r) => ms(percentile(r.latencies, 0.99))],
    ['burst took', (r) => ms(r.durationMs)],
  ]);
}

/** The catalogue table, one column per run. */
export function catalogueTable(runs: CatalogueRun[]): string {
  return grid(runs, [
    ['reprices (2 replicas)', (r) => String(r.reprices)],
    ['reads meanwhile', (r) => String(r.reads)],
    ['TORN reads (half repriced)', (r) => String(r.torn)],
    ['other errors', (r) => String(r.failed)],
    ['read latency p50', (r) => ms(percentile(r.readLatencies, 0.5))],
    ['read latency p99', (r) => ms(percentile(r.readLatencies, 0.99))],
    ['took', (r) => ms(r.durationMs)],
  ]);
}

function grid<R extends { title: string }>(
  runs: R[],
  rows: [string, (run: R) => string][],
): string {
  const widths = [
    Math.max(...rows.map(([label]) => label.length)),
    ...runs.map((run) =>
      Math.max(run.title.length, ...rows.map(([, cell]) => cell(run).length)),
    ),
  ];
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
  return [
    line(['', ...runs.map((run) => run.title)]),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(([label, cell]) => line([label, ...runs.map(cell)])),
  ].join('\n');
}
