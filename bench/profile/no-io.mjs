// This library's own JavaScript per lock+unlock pair, without I/O: one
// ioredis client whose `sendCommand` answers at once (granted, deleted), for
// Redlock.acquire(key), Redlock.acquire(key, { ttl, waitTimeout }) and
// node-redlock; client CPU µs and bytes allocated per pair (heap growth plus
// what each GC freed), blocks of 20,000 pairs after two warm-up rounds.
// Run after `npm run build`: node bench/profile/no-io.mjs [esm dir]
import { resolve } from 'node:path';
import v8 from 'node:v8';
import { Redis } from 'ioredis';
import NodeRedlock from 'redlock';

const dir = resolve(process.argv[2] ?? new URL('../../dist/esm', import.meta.url).pathname);
const { Redlock } = await import(resolve(dir, 'index.js'));
const { ACQUIRE_SCRIPT } = await import(resolve(dir, 'core/scripts/index.js'));
const answering = (reply) => {
  const client = new Redis({ port: 1, lazyConnect: true });
  client.sendCommand = (command) => Promise.resolve(reply(command.args[0]));
  return [client];
};
// Ours answers 1 to a granted acquire and 2 to a release that deleted one key.
const ours = new Redlock({ clients: answering((sha) => (sha === ACQUIRE_SCRIPT.sha ? 1 : 2)), ttl: 10_000, waitTimeout: 0 });
const theirs = new NodeRedlock(answering(() => 1), { retryCount: 0 });
const options = { ttl: 10_000, waitTimeout: 0 };
const libs = {
  'Redlock.acquire(key)': async (k) => (await ours.acquire(k)).release(),
  'Redlock.acquire(key, options)': async (k) => (await ours.acquire(k, options)).release(),
  'node-redlock': async (k) => (await theirs.acquire([k], 10_000)).release(),
};
const N = 20_000;
const rows = Object.fromEntries(Object.keys(libs).map((n) => [n, []]));
let k = 0;
for (let round = 0; round < 7; round++) {
  for (const [name, pair] of Object.entries(libs)) {
    const gc = new v8.GCProfiler();
    gc.start();
    const heap0 = v8.getHeapStatistics().used_heap_size;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < N; i++) await pair(`k${k++}`);
    const cpu = process.cpuUsage(cpu0);
    let freed = v8.getHeapStatistics().used_heap_size - heap0;
    for (const s of gc.stop().statistics) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize;
    if (round >= 2) rows[name].push({ cpu: (cpu.user + cpu.system) / N, alloc: freed / N });
  }
}
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
for (const [name, r] of Object.entries(rows))
  console.log(`${name.padEnd(32)} ${median(r.map((x) => x.cpu)).toFixed(2)} µs  ${median(r.map((x) => x.alloc)).toFixed(0)} B per pair`);
await ours.quit();
