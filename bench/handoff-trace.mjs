// Where the time of a contended key goes across processes (scenario 3b
// taken apart): 16 processes on 5 local nodes loop acquire, checker INCR,
// 1 ms (HOLD), checker DECR, release for 3 s; each tags its critical sections, and
// the parent prints how many went straight to the same process (a lease
// kept for the caller asking again) and how long a section-to-section gap
// lasts when the lock stays in one process and when it moves to another.
// Run after `npm run build`:
//   node bench/handoff-trace.mjs                         (default options)
//   OPTS='{"localHandoff":0}' node bench/handoff-trace.mjs
//   HOLD=300 WORKERS=4 RUN_MS=15000 node bench/handoff-trace.mjs   (long sections)
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Redlock } from '../dist/esm/index.js';
import { startServers } from '../scripts/redis-nodes.mjs';
import { median, percentile } from './util.mjs';

const WORKERS = Number(process.env.WORKERS ?? 16);
const RUN_MS = Number(process.env.RUN_MS ?? 3000);
/** How long each critical section lasts (ms). */
const HOLD = Number(process.env.HOLD ?? 1);

if (process.argv[2] === 'worker') {
  const [urls, checkerUrl] = [JSON.parse(process.argv[3]), process.argv[4]];
  const redlock = new Redlock({ clients: urls, ttl: 10_000, waitTimeout: 10_000, ...JSON.parse(process.env.OPTS ?? '{}') });
  await Promise.all(redlock.nodes.map((n) => n.client.ping()));
  const checker = new Redis(checkerUrl);
  process.on('message', async ({ endAt }) => {
    const sections = [];
    while (Date.now() < endAt) {
      const asked = performance.now();
      const lock = await redlock.acquire('hot');
      const held = performance.now();
      await checker.incr('inside');
      await new Promise((resolve) => setTimeout(resolve, HOLD));
      await checker.decr('inside');
      const released = performance.now();
      const result = await lock.release();
      const how = result.deferred ? 'kept' : result.handedOver ? 'handed' : 'nodes';
      const origin = performance.timeOrigin;
      sections.push({ asked: asked + origin, held: held + origin, released: released + origin, how });
    }
    await redlock.quit();
    await checker.quit();
    process.send(sections);
  });
  // The parent gone closes the IPC channel: exit rather than linger.
  process.on('disconnect', () => process.exit(0));
  process.send('ready');
} else {
  const servers = await startServers(6);
  const urls = servers.slice(0, 5).map((s) => s.url);
  const workers = [];
  try {
    for (let i = 0; i < WORKERS; i++) {
      const child = fork(fileURLToPath(import.meta.url), ['worker', JSON.stringify(urls), servers[5].url], {
        env: { ...process.env, HOLD: String(HOLD) },
      });
      await new Promise((resolve) => child.once('message', resolve));
      workers.push(child);
    }
    const endAt = Date.now() + RUN_MS;
    const results = await Promise.all(
      workers.map((child, w) => {
        child.send({ endAt });
        return new Promise((resolve) => child.once('message', (sections) => resolve(sections.map((s) => ({ ...s, w })))));
      }),
    );
    const all = results.flat().sort((a, b) => a.held - b.held);
    const elapsed = all.at(-1).held - all[0].held;
    const ms = (xs, p) => (xs.length ? percentile([...xs].sort((a, b) => a - b), p).toFixed(2) : '-');
    const same = [];
    const moved = [];
    const runs = [];
    let run = 1;
    for (let i = 1; i < all.length; i++) {
      const gap = all[i].held - all[i - 1].released;
      if (all[i].w === all[i - 1].w) {
        same.push(gap);
        run++;
      } else {
        moved.push(gap);
        runs.push(run);
        run = 1;
      }
    }
    const counts = {};
    for (const s of all) counts[s.how] = (counts[s.how] ?? 0) + 1;
    const waits = all.map((s) => s.held - s.asked);
    console.log(`options ${process.env.OPTS ?? '{}'}, ${WORKERS} processes, ${HOLD} ms sections: ${all.length} sections, ${((all.length / elapsed) * 1000).toFixed(0)} CS/s`);
    console.log(`releases: ${JSON.stringify(counts)} (kept: held back for the caller asking again)`);
    console.log(`sections in a row in one process: median ${median(runs)}, max ${Math.max(...runs)}`);
    console.log(`gap, end of one section to start of the next: same process p50 ${ms(same, 50)} ms, another process p50 ${ms(moved, 50)} ms, p90 ${ms(moved, 90)} ms`);
    console.log(`wait per acquire: p50 ${ms(waits, 50)} ms, p99 ${ms(waits, 99)} ms, max ${Math.max(...waits).toFixed(0)} ms`);
  } finally {
    for (const child of workers) child.kill();
    await Promise.all(servers.map((s) => s.stop()));
  }
}
