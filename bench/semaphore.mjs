// `node bench/semaphore.mjs` (part of `npm run bench` and `npm run
// bench:shapes`): a counting semaphore under contention. 64 loops on ONE
// resource with 8 permits, each holding its permit 1 ms and asking again at
// once, on 1 and 5 local nodes: this library (`acquire(key, { permits: 8 })`,
// default settings) against redis-semaphore's `Semaphore` (1 node: one
// sorted set) and `RedlockSemaphore` (5 nodes: one sorted set per node,
// held on a quorum), polling every 10 ms as the peers of bench/run.mjs do.
// Two shapes: the 64 loops in one client process (one library instance),
// and spread over 16 client processes of 4 loops each (16 instances).
// Client processes are long-lived (forked once, as scenario 3b of run.mjs),
// with a new library instance per run. Rounds are interleaved (every library
// once per round and cell, the order rotating); tables give medians of the
// rounds, and the most holders ever seen at once over all rounds.
//
// Each client records every hold on CLOCK_MONOTONIC (the same clock in all
// processes), from the moment its acquire resolved to the moment before it
// asked for the release: a sweep over all of them gives the most holders at
// once (for this library it must never pass 8), with no checker round trip
// inside the critical section. Client CPU (process.cpuUsage of the client
// processes) and server CPU (INFO cpu of the lock nodes) per grant, a grant
// being one acquire and its release.
// Options:
//   --quick            a short run (2 rounds of 0.8 s)
//   --rounds=N         rounds (default 5, quick 2)
//   --run-ms=MS        length of one run (default 2000, quick 800)
//   --nodes=1,5        topologies
//   --shapes=one,procs one process, or 16 processes
//   --processes=N      processes of the 'procs' shape (default 16)
//   --workers=N        loops in all (default 64)
//   --permits=N        permits of the resource (default 8)
//   --hold-ms=MS       hold (default 1)
//   --libs=a,b         subset (nestjs-redlock, redis-semaphore; 'baseline'
//                      with BENCH_BASELINE=<checkout, built> if it has permits)
//   --no-write         don't write bench/SEMAPHORE.md
//   --out=FILE         write the report there instead
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServers } from '../scripts/redis-nodes.mjs';
import { BASELINE, HAS_BASELINE, NONE, OURS, PEER } from './permits-libs.mjs';
import { forkWorkers, maxOverlap, runPlan, stopWorkers, waitFigures, windowFigures } from './permits-run.mjs';
import { internalClient, median, parseFlags } from './util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = parseFlags();
const quick = Boolean(args.quick);
const config = {
  rounds: Number(args.rounds ?? (quick ? 2 : 5)),
  runMs: Number(args['run-ms'] ?? (quick ? 800 : 2000)),
  warmMs: quick ? 200 : 400,
  topologies: String(args.nodes ?? '1,5').split(',').map(Number),
  shapes: String(args.shapes ?? 'one,procs').split(','),
  processes: Number(args.processes ?? 16),
  workers: Number(args.workers ?? 64),
  permits: Number(args.permits ?? 8),
  holdMs: Number(args['hold-ms'] ?? 1),
  libs: args.libs ? String(args.libs).split(',') : [OURS, ...(HAS_BASELINE ? [BASELINE] : []), PEER],
  ttl: 10_000,
  wait: 10_000,
};
const SHAPES = {
  one: { title: `${config.workers} loops in one process`, processes: 1 },
  procs: { title: `${config.workers} loops in ${config.processes} processes`, processes: config.processes },
};
const peerName = (nodes) => (nodes === 1 ? 'redis-semaphore Semaphore' : 'redis-semaphore RedlockSemaphore');
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const servers = await startServers(5);
const admin = servers.map((s) => internalClient(s.url));
const serverVersion = (await admin[0].info('server')).match(/redis_version:(\S+)/)?.[1];
const urlsFor = (nodes) => servers.slice(0, nodes).map((s) => s.url);
const maxProcesses = Math.max(...config.shapes.map((s) => SHAPES[s].processes));
const children = await forkWorkers(maxProcesses);

/** The loops of a shape, per process: `workers` loops on one key, split evenly. */
function planOf(shape, key, role = 'permit') {
  const n = SHAPES[shape].processes;
  return Array.from({ length: n }, (_, i) => {
    const loops = Math.floor(config.workers / n) + (i < config.workers % n ? 1 : 0);
    return [{ role, loops, key, holdMs: config.holdMs }];
  });
}

/** One run of `lib` on a cell, reduced to its figures. */
async function runCell(lib, nodes, shape, tag, ms) {
  await Promise.all(admin.map((c) => c.flushall()));
  const run = await runPlan(children, planOf(shape, `sem:${tag}`), {
    lib,
    urls: urlsFor(nodes),
    opts: { ttl: config.ttl, wait: config.wait, permits: config.permits },
    ms,
    admin: admin.slice(0, nodes),
  });
  const holds = run.groups.permit;
  const waits = waitFigures(holds.waits);
  const { perSec, inUse } = windowFigures(holds.intervals, run.window);
  return {
    grantsPerSec: perSec,
    inUse,
    maxHolders: maxOverlap(holds.intervals),
    meanWaitMs: waits.meanWaitMs,
    p99WaitMs: waits.p99WaitMs,
    maxWaitMs: waits.maxWaitMs,
    gaveUps: holds.gaveUps,
    cpuUsPerGrant: run.cpuUs / waits.grants,
    serverUsPerGrant: run.serverUs / waits.grants,
    commandsPerGrant: run.commands / waits.grants,
    retriesPerGrant: run.stats.retries === undefined ? undefined : run.stats.retries / waits.grants,
    error: holds.errors[0],
  };
}

/**
 * The most a semaphore could reach: `permits` loops holding 1 ms back to
 * back with no lock at all, in one process. Median of 3.
 */
async function ceiling() {
  const values = [];
  for (let i = 0; i < 3; i++) {
    const run = await runPlan(children, [[{ role: 'permit', loops: config.permits, key: 'ceiling', holdMs: config.holdMs }]], {
      lib: NONE,
      urls: [],
      opts: {},
      ms: config.runMs,
    });
    values.push(windowFigures(run.groups.permit.intervals, run.window).perSec);
  }
  return median(values);
}

const COLUMNS = {
  grantsPerSec: ['grants/s', 0],
  inUse: ['permits in use (mean)', 2],
  maxHolders: ['max holders (all rounds)', 0],
  meanWaitMs: ['mean wait ms', 1],
  p99WaitMs: ['p99 wait ms', 1],
  maxWaitMs: ['max wait ms', 0],
  gaveUps: ['gave up', 0],
  cpuUsPerGrant: ['client CPU µs/grant', 1],
  serverUsPerGrant: ['server CPU µs/grant', 1],
  commandsPerGrant: ['cmds/grant', 1],
  retriesPerGrant: ['waits/grant', 2],
};

/** results[`${nodes}|${shape}`][lib] = per-round figures */
const results = {};
let ceil;
try {
  ceil = await ceiling();
  log(`ceiling without a lock: ${ceil.toFixed(0)} grants/s (${config.permits} loops holding ${config.holdMs} ms back to back)`);
  for (const nodes of config.topologies)
    for (const shape of config.shapes) for (const lib of config.libs) await runCell(lib, nodes, shape, `warm:${lib}`, config.warmMs);
  log('warmed up');
  for (let round = 0; round < config.rounds; round++)
    for (const nodes of config.topologies)
      for (const shape of config.shapes) {
        const order = config.libs.map((_, i) => config.libs[(i + round) % config.libs.length]);
        for (const lib of order) {
          const r = await runCell(lib, nodes, shape, `${round}:${lib}`, config.runMs);
          ((results[`${nodes}|${shape}`] ??= {})[lib] ??= []).push(r);
          log(
            `round ${round + 1} ${nodes} node(s) ${shape} ${lib}: grants/s ${r.grantsPerSec.toFixed(0)}, in use ${r.inUse.toFixed(2)}, max holders ${r.maxHolders}, max wait ${r.maxWaitMs?.toFixed(0)} ms, CPU µs/grant ${r.cpuUsPerGrant.toFixed(1)}${r.gaveUps ? `, gave up ${r.gaveUps} (${r.error})` : ''}`,
          );
        }
      }
} finally {
  await stopWorkers(children);
  await Promise.all(admin.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.stop()));
}

const report = renderReport();
console.log('\n' + report);
if (!args['no-write']) {
  const out = args.out ? String(args.out) : join(here, 'SEMAPHORE.md');
  writeFileSync(out, report);
  console.log(`written to ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function renderReport() {
  const lines = [
    '# Semaphore benchmark',
    '',
    `Command: \`node bench/semaphore.mjs${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, redis-server ${serverVersion}, ${process.platform}.`,
    `Load: ${config.workers} loops on one resource with ${config.permits} permits, each holding its permit ${config.holdMs} ms and asking again at once; lease ${config.ttl / 1000} s, wait up to ${config.wait / 1000} s.`,
    `${OURS}: \`acquire(key, { permits: ${config.permits} })\`, default settings. redis-semaphore: \`Semaphore\` on 1 node, \`RedlockSemaphore\` on 5, retryInterval 10 ms.`,
    `Medians of ${config.rounds} interleaved rounds of ${config.runMs / 1000} s per run (every library once per round and cell, the order rotating), after an unmeasured ${config.warmMs / 1000} s run of each; client processes long-lived, a new library instance per run.`,
    'grants/s: acquires granted within the run\'s window, per second; permits in use: holders at an average instant of the window; max holders: the most holds that overlapped at any instant, over every round (holds recorded on CLOCK_MONOTONIC in each client, from the acquire resolved to the release asked); waits/grant: waits between attempts (this library\'s `stats.retries`) per grant; CPU per grant: one acquire and its release, the client processes (process.cpuUsage) and all lock nodes (INFO cpu).',
    `Ceiling (${config.permits} loops holding ${config.holdMs} ms back to back, no lock, one process): ${ceil?.toFixed(0)} grants/s. No semaphore of ${config.permits} permits can beat it.`,
    '',
  ];
  for (const nodes of config.topologies)
    for (const shape of config.shapes) {
      const rows = results[`${nodes}|${shape}`];
      if (!rows) continue;
      const med = Object.fromEntries(
        Object.entries(rows).map(([lib, list]) => [
          lib,
          Object.fromEntries(
            Object.keys(COLUMNS).map((k) => [k, k === 'maxHolders' ? Math.max(...list.map((r) => r[k])) : k === 'gaveUps' ? list.reduce((a, r) => a + r[k], 0) : median(list.map((r) => r[k]))]),
          ),
        ]),
      );
      lines.push(`## ${nodes} node${nodes > 1 ? 's' : ''}, ${SHAPES[shape].title}`, '');
      const header = ['library', ...Object.values(COLUMNS).map(([label]) => label), 'grants/s × peer', 'CPU/grant × peer'];
      lines.push(`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
      for (const lib of config.libs) {
        const m = med[lib];
        if (!m) continue;
        const peer = med[PEER];
        const cells = Object.entries(COLUMNS).map(([k, [, digits]]) => (m[k] === undefined ? '' : m[k].toFixed(digits)));
        const name = lib === PEER ? peerName(nodes) : lib === OURS ? `**${lib}**` : lib;
        lines.push(
          `| ${name} | ${cells.join(' | ')} | ${peer ? (m.grantsPerSec / peer.grantsPerSec).toFixed(2) : ''} | ${peer ? (m.cpuUsPerGrant / peer.cpuUsPerGrant).toFixed(2) : ''} |`,
        );
      }
      lines.push('');
      const ours = rows[OURS];
      const theirs = rows[PEER];
      if (ours && theirs && ours.length > 1) {
        const ratios = ours.map((r, i) => r.grantsPerSec / theirs[i].grantsPerSec);
        lines.push(
          `Round by round, ${OURS} ÷ ${peerName(nodes)}, grants/s: ${ratios.map((v) => v.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)}); client CPU per grant: ${ours.map((r, i) => (r.cpuUsPerGrant / theirs[i].cpuUsPerGrant).toFixed(2)).join(', ')}.`,
          '',
        );
      }
    }
  lines.push('gave up: acquires that ran out of their wait, summed over the rounds (every one must get a permit).');
  return lines.join('\n') + '\n';
}
