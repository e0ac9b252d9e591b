// Cost of fencing tokens: acquire + release latency with and without
// `fencing: true`, on five local redis-server processes (own servers, loopback).
// Run after `npm run build`:  node bench/fencing-cost.mjs [rounds]
import { Redlock } from '../dist/esm/index.js';
import { startServers } from '../scripts/redis-nodes.mjs';

const rounds = Number(process.argv[2] ?? 3000);
const servers = await startServers(5);
const redlock = new Redlock({ clients: servers.map((s) => s.url), ttl: 10_000, logger: { warn() {} } });

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { mean: +mean.toFixed(3), p50: +pct(s, 50).toFixed(3), p99: +pct(s, 99).toFixed(3) };
};

try {
  // Warm up connections and script caches.
  for (let i = 0; i < 200; i++) {
    await (await redlock.acquire(`warm:${i % 7}`, { fencing: i % 2 === 0 })).release();
  }
  const acquire = { off: [], on: [] };
  const cycle = { off: [], on: [] };
  // Interleave the two modes so drift in machine load hits both alike.
  for (let i = 0; i < rounds; i++) {
    for (const mode of i % 2 ? ['off', 'on'] : ['on', 'off']) {
      const t0 = performance.now();
      const lock = await redlock.acquire(`bench:${mode}:${i % 50}`, { fencing: mode === 'on' });
      const t1 = performance.now();
      await lock.release();
      const t2 = performance.now();
      acquire[mode].push(t1 - t0);
      cycle[mode].push(t2 - t0);
    }
  }
  const result = {
    rounds,
    nodes: 5,
    acquireMs: { off: summary(acquire.off), on: summary(acquire.on) },
    acquireReleaseMs: { off: summary(cycle.off), on: summary(cycle.on) },
  };
  result.acquireMeanRatio = +(result.acquireMs.on.mean / result.acquireMs.off.mean).toFixed(2);
  console.log(JSON.stringify(result, null, 2));
} finally {
  await redlock.quit();
  await Promise.all(servers.map((s) => s.stop()));
}
