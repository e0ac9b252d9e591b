// How long acquires keep failing after a silent partition heals.
//
//   node scripts/partition-recovery.mjs [--rounds=5] [--modes=blackhole,down]
//     [--nodes=3] [--cut=2] [--partition=<ms>] [--dist=dist/esm]
//     [--set=<json RedlockOptions>]
//
// Needs root (network namespaces; scripts/netns-nodes.mjs) and a build
// (npm run build). Starts --nodes redis-servers, each in its own namespace,
// and a Redlock (the build in --dist) on them. Each round: cuts --cut nodes
// off (a quorum lost), keeps acquiring through the partition (one
// tryAcquire every 50 ms, so the cut connections have requests in flight, as
// a busy service's would), heals, then measures the time from the heal to
// the first acquire that succeeds (attempts back to back, each bounded by
// the node timeout). Partitions last 2, 3.5, 5, 6.5, 8, ... s in turn, so
// the heal falls at different points of the kernel's retransmission backoff
// (--partition=<ms>: that long in every round).
// Prints one line per round and a summary per mode; exits 1 when a round
// saw no successful acquire within 30 s of the heal.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NetnsNodes, netnsUnavailable } from './netns-nodes.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, ...v] = a.replace(/^--/, '').split('=');
    return [k, v.join('=')];
  }),
);
const rounds = Number(args.rounds ?? 5);
const modes = (args.modes ?? 'blackhole,down').split(',');
const count = Number(args.nodes ?? 3);
const cut = Number(args.cut ?? 2);
const dist = resolve(args.dist ?? 'dist/esm');
const fixedMs = args.partition ? Number(args.partition) : undefined;
const extra = args.set ? JSON.parse(args.set) : {};
const GIVE_UP_MS = 30_000;

const why = netnsUnavailable();
if (why) {
  console.log(`skipped: ${why}`);
  process.exit(0);
}
const { Redlock } = await import(pathToFileURL(`${dist}/core/index.js`).href);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round1 = (ms) => Math.round(ms);

const nodes = await NetnsNodes.start(count);
let redlock;
const stop = async () => {
  await redlock?.quit().catch(() => undefined);
  await nodes.stop();
};
process.once('SIGINT', () => void stop().then(() => process.exit(130)));
process.once('SIGTERM', () => void stop().then(() => process.exit(143)));

/** One attempt: 'ok', or the failure's reason. */
async function attempt() {
  try {
    const lock = await redlock.tryAcquire('recovery');
    if (!lock) return 'busy';
    await lock.release();
    return 'ok';
  } catch (error) {
    return error?.reason ?? error?.message ?? String(error);
  }
}

const results = {};
try {
  redlock = new Redlock({ clients: nodes.urls, ttl: 2000, logger: { warn: () => undefined }, ...extra });
  if (!(await redlock.ready(10_000))) throw new Error('nodes not ready');
  console.log(
    `${count} nodes in namespaces, ${cut} cut per round; library ${dist}; options ${JSON.stringify({ ttl: 2000, ...extra })}`,
  );
  for (const mode of modes) {
    results[mode] = [];
    for (let r = 0; r < rounds; r++) {
      const partitionMs = fixedMs ?? 2000 + 1500 * r;
      // Start from a working quorum.
      const warm = performance.now();
      while ((await attempt()) !== 'ok') {
        if (performance.now() - warm > GIVE_UP_MS) throw new Error('no quorum before the round');
        await sleep(50);
      }
      for (let i = 0; i < cut; i++) nodes.partition(i, mode);
      const cutAt = performance.now();
      const during = {};
      while (performance.now() - cutAt < partitionMs) {
        const outcome = await attempt();
        during[outcome] = (during[outcome] ?? 0) + 1;
        await sleep(50);
      }
      for (let i = 0; i < cut; i++) nodes.heal(i);
      const healedAt = performance.now();
      const after = {};
      let recoveredMs;
      while (performance.now() - healedAt < GIVE_UP_MS) {
        const outcome = await attempt();
        if (outcome === 'ok') {
          recoveredMs = performance.now() - healedAt;
          break;
        }
        after[outcome] = (after[outcome] ?? 0) + 1;
      }
      results[mode].push(recoveredMs);
      console.log(
        `${mode} round ${r + 1}: partition ${partitionMs} ms (attempts ${JSON.stringify(during)}), ` +
          `first acquire ${recoveredMs === undefined ? `none within ${GIVE_UP_MS} ms` : `${round1(recoveredMs)} ms`} after the heal` +
          (Object.keys(after).length ? ` (failed before it: ${JSON.stringify(after)})` : ''),
      );
    }
  }
} finally {
  await stop();
}
console.log('\nmode | rounds | heal to first acquire, ms (each round) | max');
for (const [mode, list] of Object.entries(results)) {
  const shown = list.map((v) => (v === undefined ? 'none' : round1(v)));
  const max = list.some((v) => v === undefined) ? `> ${GIVE_UP_MS}` : round1(Math.max(...list));
  console.log(`${mode} | ${list.length} | ${shown.join(', ')} | ${max}`);
}
if (Object.values(results).some((list) => list.some((v) => v === undefined))) process.exitCode = 1;
