// `npm run bench`: this library against its peers and a raw-ioredis floor,
// on 1 and 5 local Redis nodes, rounds interleaved (each round runs every
// library once, in a rotated order) so machine noise hits all alike; the
// tables report medians over rounds; scenario 3 also reports the ceiling no
// lock can beat (the same critical section back to back, without a lock).
// Options:
//   --quick            a short run (about 2 minutes)
//   --rounds=N         rounds of scenarios 1-3 (default 3, quick 2)
//   --hold-seconds=S   scenario 4 hold time (default 30, quick 3)
//   --held-locks=N     scenario 4 lock count (default 10000, quick 2000)
//   --held-ttl=MS      scenario 4 lease (default 10000, quick 1500)
//   --nodes=1,5        topologies
//   --scenarios=seq,seqfar,par,hot,hotproc,held
//   --far-ms=MS        scenario 1b: delay each way to the two far nodes (default 1)
//   --libs=a,b         subset of libraries (names as printed)
//   --no-write         don't write bench/RESULTS.md
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServers } from '../scripts/redis-nodes.mjs';
import { startFarNodes } from '../scripts/latency-proxy.mjs';
import { ALL, createLib, FLOOR, OURS, PEERS } from './libs.mjs';
import { held, hotInProcess, hotWorker, parallel, sequentialTakingTurns, summarizeHot } from './scenarios.mjs';
import { countCommands, internalClient, median, parseFlags, sleep } from './util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = parseFlags();
const quick = Boolean(args.quick);
const config = {
  rounds: Number(args.rounds ?? (quick ? 2 : 3)),
  seqMs: quick ? 400 : 1000,
  parMs: quick ? 400 : 1000,
  hotMs: quick ? 800 : 2000,
  holdMs: Number(args['hold-seconds'] ?? (quick ? 3 : 30)) * 1000,
  heldLocks: Number(args['held-locks'] ?? (quick ? 2000 : 10_000)),
  topologies: String(args.nodes ?? '1,5').split(',').map(Number),
  scenarios: String(args.scenarios ?? 'seq,seqfar,par,hot,hotproc,held').split(','),
  /** Scenario 1b: ms added in each direction to two of the five nodes. */
  farMs: Number(args['far-ms'] ?? 1),
  libs: args.libs ? String(args.libs).split(',') : ALL,
  ttl: 10_000,
  /** Scenario 4's lease: the watchdog extends about every third of it. */
  heldTtl: Number(args['held-ttl'] ?? (quick ? 1500 : 10_000)),
  wait: 10_000,
  hotWorkers: 16,
  /** Unmeasured run of each scenario 1-3 by every library before round 1. */
  warmMs: quick ? 150 : 400,
};

const SCENARIOS = {
  seq: { title: '1. Uncontended, sequential lock+unlock of distinct keys', main: 'pairsPerSec' },
  seqfar: {
    title: `1b. As 1, with two of the five nodes farther away (${config.farMs} ms more each way, as in another zone)`,
    main: 'pairsPerSec',
    onlyNodes: 5,
  },
  par: { title: '2. Parallel: 64 workers on distinct keys', main: 'pairsPerSec' },
  hot: { title: '3a. Contended: 16 workers in ONE process on one key, 1 ms hold', main: 'csPerSec' },
  hotproc: { title: '3b. Contended: 16 workers in 16 processes on one key, 1 ms hold', main: 'csPerSec' },
  held: { title: `4. Held: ${config.heldLocks} locks held with the watchdog for ${config.holdMs / 1000} s`, main: 'cpuPercent', lowerIsBetter: true },
};
const COLUMNS = {
  pairsPerSec: ['pairs/s', 0],
  acquireP50: ['acq p50 ms', 3],
  acquireP99: ['acq p99 ms', 3],
  releaseP50: ['rel p50 ms', 3],
  releaseP99: ['rel p99 ms', 3],
  cpuUsPerPair: ['CPU µs/pair', 1],
  commandsPerPair: ['cmds/pair', 1],
  csPerSec: ['CS/s', 0],
  meanWaitMs: ['mean wait ms', 1],
  p99WaitMs: ['p99 wait ms', 1],
  maxWaitMs: ['max wait ms', 0],
  minShare: ['min share', 2],
  inOrder: ['in order', 2],
  maxOvertaken: ['max overtaken', 0],
  gaveUps: ['gave up', 0],
  violations: ['violations', 0],
  commandsPerCs: ['cmds/CS', 1],
  cpuUsPerCs: ['CPU µs/CS', 1],
  locks: ['locks', 0],
  cpuPercent: ['CPU % core', 1],
  commandsPerSecPerNode: ['cmds/s/node', 0],
  lost: ['lost', 0],
  failed: ['acquire failed', 0],
};

countCommands();
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const servers = await startServers(6);
const lockServers = servers.slice(0, 5);
const checkerUrl = servers[5].url;
const admin = lockServers.map((s) => internalClient(s.url));
const serverVersion = (await admin[0].info('server')).match(/redis_version:(\S+)/)?.[1];
const flush = () => Promise.all(admin.map((c) => c.flushall()));

/** Worker processes for scenario 3b, forked once and reused by every run. */
let children = [];
async function forkChildren() {
  children = await Promise.all(
    Array.from({ length: config.hotWorkers }, () => {
      const child = fork(join(here, 'worker.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      return new Promise((resolve) => child.once('message', () => resolve(child)));
    }),
  );
}
function ask(child, msg) {
  return new Promise((resolve, reject) => {
    child.once('message', (reply) => (reply.error ? reject(new Error(reply.error)) : resolve(reply)));
    child.send(msg);
  });
}

async function hotInProcesses(name, urls, tag, durationMs) {
  const key = `hotp:${tag}`;
  await Promise.all(children.map((c) => ask(c, { cmd: 'setup', lib: name, urls, opts: { ttl: config.ttl, wait: config.wait }, checkerUrl })));
  const start = Date.now() + 50;
  await sleep(50);
  const replies = await Promise.all(children.map((c) => ask(c, { cmd: 'go', key, endAt: start + durationMs })));
  const elapsed = Math.max(...replies.map((r) => r.finishedAt)) - start;
  return summarizeHot(replies.map((r) => r.result), elapsed, replies.reduce((a, r) => a + r.commands, 0));
}

/**
 * The most any lock could reach in scenario 3: one worker running the same
 * critical section back to back with no lock at all (in memory for 3a; with
 * the checker's INCR and DECR round trips for 3b). Median of 3 runs.
 */
async function ceilings() {
  const noLock = { acquire: async () => null, release: async () => undefined };
  const run = async (enter, exit) => {
    const endAt = Date.now() + config.hotMs;
    const { waits } = await hotWorker(noLock, { key: 'ceiling', endAt, enter, exit });
    return (waits.length / config.hotMs) * 1000;
  };
  const checker = internalClient(checkerUrl);
  const inProcess = [];
  const acrossProcesses = [];
  for (let i = 0; i < 3; i++) {
    inProcess.push(await run(async () => true, async () => undefined));
    acrossProcesses.push(
      await run(
        async () => (await checker.incr('inside:ceiling')) === 1,
        async () => {
          await checker.decr('inside:ceiling');
        },
      ),
    );
  }
  await checker.quit();
  return { inProcess: median(inProcess), acrossProcesses: median(acrossProcesses) };
}
let ceiling;

/** results[scenario][topology][lib] = list of per-round results */
const results = {};
function record(scenario, nodes, lib, value) {
  ((results[scenario] ??= {})[nodes] ??= {})[lib] ??= [];
  results[scenario][nodes][lib].push(value);
}

async function runOne(scenario, name, nodes, round, durationMs) {
  const urls = await nodeUrls(scenario, nodes);
  const tag = `${round}:${name}`;
  await flush();
  if (scenario === 'hotproc') return hotInProcesses(name, urls, tag, durationMs ?? config.hotMs);
  const wait = scenario === 'hot' ? config.wait : 0;
  const ttl = scenario === 'held' ? config.heldTtl : config.ttl;
  const lib = await createLib(name, urls, { ttl, wait });
  try {
    if (scenario === 'par') return await parallel(lib, { durationMs: durationMs ?? config.parMs, tag });
    if (scenario === 'hot') return await hotInProcess(lib, { durationMs: durationMs ?? config.hotMs, workers: config.hotWorkers, tag });
    if (scenario === 'held') return await held(lib, { count: config.heldLocks, holdMs: config.holdMs, nodes, tag });
  } finally {
    await lib.close();
  }
}

/** Scenario 1b's two far nodes (proxies to lock nodes 4 and 5), started on first use. */
let farNodes;

/** The lock nodes of a run: the first `nodes` servers, or 1b's three near and two far. */
async function nodeUrls(scenario, nodes) {
  if (scenario !== 'seqfar') return lockServers.slice(0, nodes).map((s) => s.url);
  farNodes ??= await startFarNodes([lockServers[3].port, lockServers[4].port], config.farMs);
  return [...lockServers.slice(0, 3).map((s) => s.url), ...farNodes.urls];
}

/** Which scenarios run on a topology (1b only on 5 nodes). */
function scenariosOn(nodes, scenarios) {
  return scenarios.filter((s) => (SCENARIOS[s].onlyNodes ?? nodes) === nodes);
}

/** Scenario 1 (or 1b) for every library at once, in turns (see sequentialTakingTurns). */
async function sequentialInTurns(scenario, names, nodes, round, durationMs = config.seqMs) {
  const urls = await nodeUrls(scenario, nodes);
  await flush();
  const libs = {};
  try {
    for (const name of names) libs[name] = await createLib(name, urls, { ttl: config.ttl, wait: 0 });
    return await sequentialTakingTurns(libs, { durationMs, tag: round });
  } finally {
    await Promise.all(Object.values(libs).map((lib) => lib.close()));
  }
}

/**
 * Runs every scenario of rounds 1-3 once per library and topology,
 * unmeasured and short. Round 1 would otherwise time whichever library runs
 * first while V8 still compiles the code all of them share (ioredis, Node's
 * streams, the worker processes' loop), and round 1 always starts with the
 * same library.
 */
async function warmUp() {
  for (const nodes of config.topologies)
    for (const scenario of scenariosOn(nodes, config.scenarios).filter((s) => s !== 'held')) {
      if (inTurns(scenario)) await sequentialInTurns(scenario, config.libs, nodes, 'warm', config.warmMs);
      else for (const name of config.libs) await runOne(scenario, name, nodes, 'warm', config.warmMs);
    }
}

try {
  if (config.scenarios.includes('hot') || config.scenarios.includes('hotproc')) {
    ceiling = await ceilings();
    log(`ceiling without a lock: ${ceiling.inProcess.toFixed(0)} CS/s in process, ${ceiling.acrossProcesses.toFixed(0)} CS/s with the checker's round trips`);
  }
  if (config.scenarios.includes('hotproc')) await forkChildren();
  await warmUp();
  log('warmed up');
  const rotating = config.scenarios.filter((s) => s !== 'held');
  for (let round = 0; round < config.rounds; round++) {
    for (const nodes of config.topologies) {
      for (const scenario of scenariosOn(nodes, rotating)) {
        const order = config.libs.map((_, i) => config.libs[(i + round) % config.libs.length]);
        // Scenario 1 runs every library at once; the others one at a time.
        const turns = inTurns(scenario) ? await sequentialInTurns(scenario, order, nodes, round) : undefined;
        for (const name of order) {
          const r = turns?.[name] ?? (await runOne(scenario, name, nodes, round));
          record(scenario, nodes, name, r);
          log(`round ${round + 1} ${nodes} node(s) ${scenario} ${name}: ${brief(SCENARIOS[scenario].main, r)}`);
        }
      }
    }
  }
  // Held locks run once per library (each run is itself a long average).
  if (config.scenarios.includes('held')) {
    for (const nodes of config.topologies) {
      for (const name of config.libs.filter((l) => l !== FLOOR)) {
        const r = await runOne('held', name, nodes, 0);
        record('held', nodes, name, r);
        log(`${nodes} node(s) held ${name}: ${brief('cpuPercent', r)} ${brief('commandsPerSecPerNode', r)} lost ${r.lost}`);
      }
    }
  }
} finally {
  await Promise.all(
    children.map((c) => {
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.send({ cmd: 'exit' });
      return exited;
    }),
  );
  await farNodes?.stop();
  await Promise.all(admin.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.stop()));
}

/** Scenarios 1 and 1b run every library at once, in turns. */
function inTurns(scenario) {
  return scenario === 'seq' || scenario === 'seqfar';
}

function brief(metric, r) {
  const [label, digits] = COLUMNS[metric];
  return `${label} ${r[metric]?.toFixed(digits)}`;
}

const report = renderReport();
console.log('\n' + report);
if (!args['no-write']) {
  writeFileSync(join(here, 'RESULTS.md'), report);
  console.log(`written to bench/RESULTS.md (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function renderReport() {
  const version = (pkg) => JSON.parse(readFileSync(join(here, '..', 'node_modules', pkg, 'package.json'), 'utf8')).version;
  const ownVersion = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')).version;
  const lines = [
    '# Benchmark results',
    '',
    `Command: \`npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, redis-server ${serverVersion}, ${process.platform}.`,
    `Libraries: ${OURS} ${ownVersion} (default settings), ${PEERS.map((p) => `${p} ${version(p)}`).join(', ')}, ioredis ${version('ioredis')}.`,
    `Peers poll every 10 ms when contended (redlock: retryDelay 10, retryJitter 5; redis-semaphore: retryInterval 10; redlock-universal: retryDelay 10). Lease ${config.ttl / 1000} s for all (scenario 4: ${config.heldTtl / 1000} s).`,
    `Scenarios 1-3: median of ${config.rounds} interleaved rounds (${config.seqMs / 1000} s, ${config.parMs / 1000} s, ${config.hotMs / 1000} s per run), after an unmeasured ${config.warmMs / 1000} s run of each of them by every library. In scenario 1 the libraries of a round take turns in blocks of 100 pairs (all connected at once), so each run is spread over the whole round. Scenario 4: one run per library.`,
    ...(results.seqfar
      ? [
          `Scenario 1b: nodes 4 and 5 are reached through a proxy process (scripts/latency-proxy.mjs) that holds every chunk ${config.farMs} ms in each direction; nodes 1-3 answer as in scenario 1, so a majority is near.`,
        ]
      : []),
    'Figures are noisy on a small shared machine: compare ratios within this run, not across runs.',
    '"× floor" and "× best peer" compare the first column (for CPU, lower is better, so the ratio is best/ours).',
    ...(ceiling
      ? [
          `Ceiling of scenario 3 (one worker running the same critical section back to back, no lock): ${ceiling.inProcess.toFixed(0)} CS/s in process (3a), ${ceiling.acrossProcesses.toFixed(0)} CS/s with the checker's INCR and DECR round trips (3b). No lock can beat it.`,
        ]
      : []),
    '',
  ];
  for (const [scenario, { title, main, lowerIsBetter }] of Object.entries(SCENARIOS)) {
    if (!results[scenario]) continue;
    for (const nodes of config.topologies) {
      const rows = results[scenario][nodes];
      if (!rows) continue;
      const medians = Object.fromEntries(
        Object.entries(rows).map(([name, list]) => [
          name,
          Object.fromEntries(Object.keys(list[0]).map((k) => [k, median(list.map((r) => r[k]))])),
        ]),
      );
      const metrics = Object.keys(Object.values(medians)[0]);
      const better = (a, b) => (lowerIsBetter ? a < b : a > b);
      const peerValues = PEERS.filter((p) => medians[p]?.[main] !== undefined).map((p) => medians[p][main]);
      const bestPeer = peerValues.reduce((best, v) => (best === undefined || better(v, best) ? v : best), undefined);
      const floor = medians[FLOOR]?.[main];
      const ratio = (v, ref) =>
        v === undefined || ref === undefined ? '' : (lowerIsBetter ? ref / v : v / ref).toFixed(2);
      lines.push(`## ${title}, ${nodes} node${nodes > 1 ? 's' : ''}`, '');
      const header = ['library', ...metrics.map((m) => COLUMNS[m]?.[0] ?? m), '× floor', '× best peer'];
      lines.push(`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
      for (const name of config.libs) {
        const m = medians[name];
        if (!m) continue;
        const cells = metrics.map((k) => (m[k] === undefined ? '' : m[k].toFixed(COLUMNS[k]?.[1] ?? 2)));
        lines.push(`| ${name === OURS ? `**${name}**` : name} | ${cells.join(' | ')} | ${ratio(m[main], floor)} | ${ratio(m[main], bestPeer)} |`);
      }
      lines.push('');
      const perRound = roundRatios(rows, main, better, ratio);
      if (perRound) lines.push(perRound, '');
    }
  }
  return lines.join('\n');
}

/**
 * Round by round, this library against the best peer of the same round.
 * Rounds are interleaved so that load on the machine hits every library of
 * a round alike: a slow round (all figures halved) moves the medians of the
 * table apart, not these ratios. Both are printed; neither replaces the other.
 */
function roundRatios(rows, main, better, ratio) {
  const ours = rows[OURS];
  if (!ours || ours.length < 2) return undefined;
  const ratios = ours.map((r, i) => {
    const peers = PEERS.map((p) => rows[p]?.[i]?.[main]).filter((v) => v !== undefined);
    const best = peers.reduce((b, v) => (b === undefined || better(v, b) ? v : b), undefined);
    return Number(ratio(r[main], best));
  });
  const shown = ratios.map((v) => v.toFixed(2)).join(', ');
  return `Round by round, ${OURS} ÷ that round's best peer: ${shown} (median ${median(ratios).toFixed(2)}).`;
}