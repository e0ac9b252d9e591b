/** One order line, as `POST /orders` takes it. */
export interface OrderLine {
  sku: string;
  qty: number;
}

/** What a burst of orders got back. */
export interface BurstResult {
  /** 201: orders accepted. */
  accepted: number;
  /** 409 with `code: 'OUT_OF_STOCK'`. */
  soldOut: number;
  /** 409 from the lock filter (body has `reason`): a SKU stayed locked too long. */
  lockBusy: number;
  /** Anything else (other statuses, network errors): should be 0. */
  failed: number;
  /** Units each SKU sold, summed over accepted orders. */
  unitsSold: Map<string, number>;
  /** Latency of every request, in ms. */
  latencies: number[];
  /** The first few unexpected answers, for the error message. */
  failures: string[];
  durationMs: number;
}

export interface BurstOptions {
  /** `?locking=` of every request. */
  locking: 'on' | 'off';
  /** Requests in flight at once. */
  concurrency: number;
  /** Called after each answer with the count so far. */
  onProgress?: (done: number) => void;
  /** Per-request limit, ms. */
  requestTimeout?: number;
}

/** Fires `orders` at `POST /orders` over real HTTP, `concurrency` at a time. */
export async function fireOrders(
  baseUrl: string,
  orders: OrderLine[][],
  options: BurstOptions,
): Promise<BurstResult> {
  const result: BurstResult = {
    accepted: 0,
    soldOut: 0,
    lockBusy: 0,
    failed: 0,
    unitsSold: new Map(),
    latencies: [],
    failures: [],
    durationMs: 0,
  };
  const url = `${baseUrl}/orders?locking=${options.locking}`;
  const start = performance.now();
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < orders.length) {
      const items = orders[next++];
      await placeOne(url, items, result, options.requestTimeout ?? 30_000);
      options.onProgress?.(++done);
    }
  };
  await Promise.all(
    Array.from(
      { length: Math.min(options.concurrency, orders.length) },
      worker,
    ),
  );
  result.durationMs = performance.now() - start;
  return result;
}

async function placeOne(
  url: string,
  items: OrderLine[],
  result: BurstResult,
  timeout: number,
): Promise<void> {
  const sent = performance.now();
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
      signal: AbortSignal.timeout(timeout),
    });
    const body = (await res.json()) as Record<string, unknown>;
    result.latencies.push(performance.now() - sent);
    if (res.status === 201) {
      result.accepted++;
      for (const { sku, qty } of items)
        result.unitsSold.set(sku, (result.unitsSold.get(sku) ?? 0) + qty);
    } else if (res.status === 409 && body.code === 'OUT_OF_STOCK') {
      result.soldOut++;
    } else if (res.status === 409 && typeof body.reason === 'string') {
      result.lockBusy++;
    } else {
      unexpected(result, `${res.status} ${JSON.stringify(body)}`);
    }
  } catch (error) {
    result.latencies.push(performance.now() - sent);
    unexpected(result, String(error));
  }
}

function unexpected(result: BurstResult, message: string): void {
  result.failed++;
  if (result.failures.length < 5) result.failures.push(message);
}

/** The q-quantile (0..1) of `values`, nearest rank. */
export function percentile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}
