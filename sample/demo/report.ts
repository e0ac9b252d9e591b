import { percentile, type BurstResult } from './burst.js';

/** One run of the burst with everything the table shows. */
export interface RunReport {
  title: string;
  burst: BurstResult;
  seed: ReadonlyMap<string, number>;
  stockLeft: Map<string, number>;
  lowestStock: number;
  lockWaits: number;
  lockRetries: number;
}

/** Units sold beyond the stock there was, over all SKUs. */
export function oversold(run: RunReport): number {
  let units = 0;
  for (const [sku, initial] of run.seed)
    units += Math.max(0, (run.burst.unitsSold.get(sku) ?? 0) - initial);
  return units;
}

/** Units sold that the stock counter does not account for (lost updates). */
export function unaccounted(run: RunReport): number {
  let units = 0;
  for (const [sku, initial] of run.seed) {
    const sold = run.burst.unitsSold.get(sku) ?? 0;
    units += Math.abs(sold - (initial - (run.stockLeft.get(sku) ?? 0)));
  }
  return units;
}

const sum = (values: Iterable<number>) =>
  [...values].reduce((total, value) => total + value, 0);

const ms = (value: number) => `${value.toFixed(0)} ms`;

/** The comparison table, one column per run. */
export function table(runs: RunReport[]): string {
  const rows: [string, (run: RunReport) => string][] = [
    ['orders sent', (r) => String(r.burst.latencies.length)],
    ['orders accepted (201)', (r) => String(r.burst.accepted)],
    ['refused, out of stock (409)', (r) => String(r.burst.soldOut)],
    ['refused, lock busy (409)', (r) => String(r.burst.lockBusy)],
    ['other errors', (r) => String(r.burst.failed)],
    [
      'units sold / in stock',
      (r) => `${sum(r.burst.unitsSold.values())} / ${sum(r.seed.values())}`,
    ],
    ['stock left', (r) => String(sum(r.stockLeft.values()))],
    ['OVERSOLD units', (r) => String(oversold(r))],
    ['lowest stock seen', (r) => String(r.lowestStock)],
    ['latency p50', (r) => ms(percentile(r.burst.latencies, 0.5))],
    ['latency p99', (r) => ms(percentile(r.burst.latencies, 0.99))],
    ['lock waits (retries)', (r) => `${r.lockWaits} (${r.lockRetries})`],
    ['burst took', (r) => ms(r.burst.durationMs)],
  ];
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
