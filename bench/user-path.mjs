// `npm run bench:user` (and the second part of `npm run bench`): uncontended
// lock+unlock pairs in the conditions applications meet, every library in
// a process of its own (bench/user-job.mjs), rounds interleaved:
//   process  cold: a fresh process per library and job (200 unmeasured
//            pairs, then the measured ones: the first seconds of a service);
//            warm: one long-lived process per library, reused by every job
//   pin      on: the client held to core 0, the Redis servers to core 1 (as
//            when the app's own work shares the core); off: unpinned
//   path     nestjs-redlock as `LockService.acquire(key, { ttl, waitTimeout })`
//            in a Nest application context, and as `Redlock.acquire(key)`
//   keys     distinct (a new key per pair) or same (each loop re-locks its key)
//   scenario seq (one loop) or par (64 concurrent loops), on 1 and 5 nodes
// Reported per cell: pairs/s, client and server CPU µs per pair, medians of the
// rounds, and ours against the best peer. Options:
//   --rounds=N (default 5)  --nodes=1,5  --process=cold,warm  --pin=on,off
//   --keys=distinct,same  --scenarios=seq,par  --libs=a,b  --pairs=N  --no-write
//   --out=<file> (instead of bench/USER-PATH.md, e.g. for a run on another Node)
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServers } from '../scripts/redis-nodes.mjs';
import { FLOOR, OURS, SERVICE, SERVICE_BASELINE } from './libs.mjs';
import { internalClient, median, parseFlags } from './util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = parseFlags();
const list = (name, fallback) => String(args[name] ?? fallback).split(',');
const PEERS = ['redlock', '@sesamecare-oss/redlock', 'redis-semaphore', 'redlock-universal'];
const config = {
  rounds: Number(args.rounds ?? 5),
  topologies: list('nodes', '1,5').map(Number),
  processes: list('process', 'cold,warm'),
  pins: cpus().length >= 2 ? list('pin', 'on,off') : ['off'],
  keys: list('keys', 'distinct,same'),
  scenarios: list('scenarios', 'seq,par'),
  libs: args.libs ? list('libs') : [SERVICE, OURS, FLOOR, ...PEERS],
  pairs: { seq: Number(args.pairs ?? 2000), par: Number(args.pairs ?? 2000) * 2 },
  warm: 200,
  opts: { ttl: 10_000, wait: 0 },
};
const ours = [SERVICE, OURS, SERVICE_BASELINE];
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const servers = await startServers(5);
const admin = servers.map((s) => internalClient(s.url));
const urlsFor = (nodes) => servers.slice(0, nodes).map((s) => s.url);

/** Holds the servers to core 1 (pinned runs) or lets them run anywhere. */
function pinServers(pin) {
  for (const s of servers) execFileSync('taskset', ['-a', '-p', '-c', pin === 'on' ? '1' : '0-1', String(s.pid)], { stdio: 'ignore' });
}

/** CPU time, in µs, the first `nodes` servers have used so far (INFO cpu). */
async function serverCpu(nodes) {
  const infos = await Promise.all(admin.slice(0, nodes).map((c) => c.info('cpu')));
  const field = (info, name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return infos.reduce((sum, info) => sum + (field(info, 'used_cpu_user') + field(info, 'used_cpu_sys')) * 1e6, 0);
}

/** A job process for `lib`, on core 0 when pinned. */
async function startJob(lib, nodes, pin) {
  const job = join(here, 'user-job.mjs');
  // BENCH_JOB_FLAGS: V8 flags for every job process (an experiment's A/B).
  const flags = (process.env.BENCH_JOB_FLAGS ?? '').split(' ').filter(Boolean);
  const [cmd, argv] = pin === 'on' ? ['taskset', ['-c', '0', process.execPath, ...flags, job]] : [process.execPath, [...flags, job]];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`job process exited (${code})`)));
  });
  child.removeAllListeners('exit');
  await ask(child, { cmd: 'setup', lib, urls: urlsFor(nodes), opts: config.opts });
  return child;
}

function ask(child, msg) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`job timed out: ${JSON.stringify(msg).slice(0, 80)}`)), 120_000);
    child.once('message', (reply) => {
      clearTimeout(timer);
      if (reply.error) reject(new Error(reply.error));
      else resolve(reply.result);
    });
    child.send(msg);
  });
}

async function stopJob(child) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send({ cmd: 'exit' });
  await exited;
}

/** Long-lived processes of the warm jobs, by library, topology and pinning. */
const warmJobs = new Map();
async function warmJob(lib, nodes, pin) {
  const key = `${lib}|${nodes}|${pin}`;
  if (!warmJobs.has(key)) {
    const child = await startJob(lib, nodes, pin);
    // Long-lived: compiled and connected before its first measured job.
    for (const scenario of config.scenarios)
      await ask(child, { cmd: 'run', scenario, keys: 'distinct', warm: 0, pairs: 2000, tag: 'prewarm' });
    warmJobs.set(key, child);
  }
  return warmJobs.get(key);
}

/** results[cell][lib] = per-round results */
const results = {};
let jobs = 0;
try {
  for (let round = 0; round < config.rounds; round++) {
    for (const nodes of config.topologies) {
      for (const pin of config.pins) {
        pinServers(pin);
        for (const proc of config.processes) {
          for (const scenario of config.scenarios) {
            for (const keys of config.keys) {
              const cell = [nodes, pin, proc, scenario, keys].join('|');
              const order = config.libs.map((_, i) => config.libs[(i + round) % config.libs.length]);
              for (const lib of order) {
                await Promise.all(admin.map((c) => c.flushall()));
                const tag = `${round}:${jobs++}`;
                const msg = { cmd: 'run', scenario, keys, warm: config.warm, pairs: config.pairs[scenario], tag };
                let result;
                const child = proc === 'cold' ? await startJob(lib, nodes, pin) : await warmJob(lib, nodes, pin);
                const server0 = await serverCpu(nodes);
                result = await ask(child, msg);
                // Server CPU of the whole job (its unmeasured pairs too), per pair.
                result.serverUsPerPair = ((await serverCpu(nodes)) - server0) / result.total;
                if (proc === 'cold') await stopJob(child);
                ((results[cell] ??= {})[lib] ??= []).push(result);
              }
              log(`round ${round + 1} ${cell}: ${order.map((l) => `${short(l)} ${results[cell][l].at(-1).pairsPerSec.toFixed(0)}/${results[cell][l].at(-1).serverUsPerPair.toFixed(1)}`).join(', ')}`);
            }
          }
        }
      }
    }
  }
} finally {
  await Promise.all([...warmJobs.values()].map(stopJob));
  await Promise.all(admin.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.stop()));
}

function short(lib) {
  return lib === SERVICE ? 'service' : lib === OURS ? 'redlock-core' : lib;
}

const report = renderReport();
console.log('\n' + report);
if (!args['no-write']) {
  const out = args.out ? String(args.out) : join(here, 'USER-PATH.md');
  writeFileSync(out, report);
  console.log(`written to ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function renderReport() {
  const peers = config.libs.filter((l) => !ours.includes(l) && l !== FLOOR);
  const lines = [
    '# The user\'s path: uncontended pairs in the conditions applications meet',
    '',
    `Command: \`node bench/user-path.mjs${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}.`,
    `Medians of ${config.rounds} interleaved rounds. Per job: ${config.warm} unmeasured pairs, then ${config.pairs.seq} (seq) or ${config.pairs.par} (par, 64 loops) measured. Lease ${config.opts.ttl / 1000} s, one attempt.`,
    '`service`: `LockService.acquire(key, { ttl, waitTimeout })` in a Nest application context; `core`: `Redlock.acquire(key)`. Cold: a fresh process per job; warm: one long-lived process per library. Pinned: client on core 0, Redis on core 1.',
    '"vs best peer": our pairs/s over the best peer\'s (≥ 0.97 is the target), and our CPU per pair over the lowest peer\'s (≤ 1 is the target).',
    '',
    `| nodes | pin | process | scenario | keys | ${config.libs.map(short).join(' | ')} | service vs best peer (rate, CPU) | core vs best peer (rate, CPU) |`,
    `|${'---|'.repeat(5)}${config.libs.map(() => '---:|').join('')}---:|---:|`,
  ];
  const medians = {};
  for (const [cell, rows] of Object.entries(results)) {
    const med = (medians[cell] = Object.fromEntries(
      Object.entries(rows).map(([lib, r]) => [lib, { rate: median(r.map((x) => x.pairsPerSec)), cpu: median(r.map((x) => x.cpuUsPerPair)), server: median(r.map((x) => x.serverUsPerPair)) }]),
    ));
    const bestRate = Math.max(...peers.map((p) => med[p]?.rate ?? 0));
    const bestCpu = Math.min(...peers.map((p) => med[p]?.cpu ?? Infinity));
    const versus = (lib) => (med[lib] ? `${(med[lib].rate / bestRate).toFixed(2)}, ${(med[lib].cpu / bestCpu).toFixed(2)}` : '');
    lines.push(
      `| ${cell.split('|').join(' | ')} | ${config.libs.map((l) => (med[l] ? `${med[l].rate.toFixed(0)} / ${med[l].cpu.toFixed(0)} / ${med[l].server.toFixed(0)} µs` : '')).join(' | ')} | ${versus(SERVICE)} | ${versus(OURS)} |`,
    );
  }
  lines.push('', 'Each library cell: pairs/s / client CPU µs per pair / server CPU µs per pair (all nodes, the job\'s unmeasured pairs included).');
  lines.push('', ...renderSummary(medians, peers));
  return lines.join('\n') + '\n';
}

/**
 * Geometric means over groups of cells, and the control that says how far a
 * cell can be trusted: each peer against the best of the other peers. A
 * library level with the best peer scores below 1 against "the best of
 * several" by the noise alone, as the highest of noisy figures wins.
 */
function renderSummary(medians, peers) {
  const gmean = (v) => Math.exp(v.reduce((a, x) => a + Math.log(x), 0) / v.length);
  // A cell is `nodes|pin|process|scenario|keys`; a group, `scenario|process`.
  const groupOf = (cell) => { const [, , proc, scenario] = cell.split('|'); return `${scenario}|${proc}`; };
  const groups = [...new Set(Object.keys(medians).map(groupOf))];
  const cellsOf = (group) => Object.entries(medians).filter(([c]) => groupOf(c) === group).map(([, m]) => m);
  const against = (lib, rivals, cells) => {
    const rates = [];
    const cpus = [];
    for (const m of cells) {
      const there = rivals.filter((p) => m[p]);
      if (!m[lib] || !there.length) continue;
      rates.push(m[lib].rate / Math.max(...there.map((p) => m[p].rate)));
      cpus.push(m[lib].cpu / Math.min(...there.map((p) => m[p].cpu)));
    }
    if (!rates.length) return '';
    return `${gmean(rates).toFixed(2)} (${rates.filter((r) => r < 0.97).length} of ${rates.length} < 0.97), ${gmean(cpus).toFixed(2)}`;
  };
  const rows = [...ours.filter((l) => config.libs.includes(l)), ...peers];
  const lines = [
    '## Summary',
    '',
    'Geometric means over the cells of each group: pairs/s against the best of the rivals (how many cells fall below 0.97), then client CPU per pair against the lowest of theirs. Ours are against every peer. Each peer is against the other peers: the control, which shows what the noise alone does to a library level with the best peer (the highest of several noisy figures wins). Last rows: ours against node-redlock alone.',
    '',
    `| library | ${groups.map((g) => g.replace('|', ', ')).join(' | ')} |`,
    `|---|${groups.map(() => '---:|').join('')}`,
  ];
  for (const lib of rows) {
    const rivals = peers.filter((p) => p !== lib);
    lines.push(`| ${short(lib)} | ${groups.map((g) => against(lib, rivals, cellsOf(g))).join(' | ')} |`);
  }
  // node-redlock is the fastest peer in most cells: ours against it alone.
  if (peers.includes('redlock'))
    for (const lib of ours.filter((l) => config.libs.includes(l)))
      lines.push(`| ${short(lib)} vs redlock | ${groups.map((g) => against(lib, ['redlock'], cellsOf(g))).join(' | ')} |`);
  return lines;
}
