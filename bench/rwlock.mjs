// `node bench/rwlock.mjs` (part of `npm run bench` and `npm run
// bench:shapes`): a read/write lock under a stream of readers. On 1 and 5
// local nodes, this library at its default settings, three cells run
// interleaved (every cell once per round, the order rotating):
//   mutex  64 loops taking a MUTEX, each on a resource of its own (64
//          distinct resources): the uncontended rate, the reference
//   read   64 loops taking a READ lock of one resource
//   rw     the same 64 readers, and 2 writers taking a WRITE lock of that
//          resource, each pausing `--write-pause-ms` between its writes
// Every hold lasts 1 ms; a loop asks again at once after its release.
// Readers must not be serialised: reads/s at least 0.9 of the mutex cell's
// pairs/s (the same loop, uncontended). Writers must not be starved by the
// stream of readers: each writer's longest wait is reported, in ms and in
// read holds. Two shapes: every loop in one client process (one library
// instance), or spread over 16 processes (4 readers each; the writers in two
// of them). Client processes are long-lived (forked once, as scenario 3b of
// run.mjs), with a new library instance per run.
//
// Each client records every hold on CLOCK_MONOTONIC (the same clock in all
// processes), from the acquire resolved to the release asked; a sweep over
// them gives the most readers at once and every instant a writer held
// together with someone else (must be 0). Client CPU (process.cpuUsage of
// the client processes) and server CPU (INFO cpu of the lock nodes) per lock
// taken and released.
// Options:
//   --quick              a short run (2 rounds of 0.8 s)
//   --rounds=N           rounds (default 5, quick 2)
//   --run-ms=MS          length of one run (default 2000, quick 800)
//   --nodes=1,5          topologies
//   --shapes=one,procs   one process, or 16 processes
//   --cells=mutex,read,rw   (also rw0: the writers never pause)
//   --processes=N        processes of the 'procs' shape (default 16)
//   --readers=N          reader loops (default 64; also the mutex cell's loops)
//   --writers=N          writer loops (default 2)
//   --hold-ms=MS         every hold (default 1)
//   --write-pause-ms=MS  a writer's pause between writes in the rw cell (default 100)
//   --libs=a,b           nestjs-redlock; 'baseline' with BENCH_BASELINE=<checkout, built>
//   --no-write           don't write bench/RWLOCK.md
//   --out=FILE           write the report there instead
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServers } from '../scripts/redis-nodes.mjs';
import { BASELINE, HAS_BASELINE, OURS } from './permits-libs.mjs';
import { forkWorkers, maxOverlap, readWriteOverlap, runPlan, stopWorkers, waitFigures, windowFigures } from './permits-run.mjs';
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
  cells: String(args.cells ?? 'mutex,read,rw').split(','),
  processes: Number(args.processes ?? 16),
  readers: Number(args.readers ?? 64),
  writers: Number(args.writers ?? 2),
  holdMs: Number(args['hold-ms'] ?? 1),
  writePauseMs: Number(args['write-pause-ms'] ?? 100),
  libs: args.libs ? String(args.libs).split(',') : [OURS, ...(HAS_BASELINE ? [BASELINE] : [])],
  ttl: 10_000,
  wait: 10_000,
};
const SHAPES = {
  one: { title: 'every loop in one process', processes: 1 },
  procs: { title: `loops spread over ${config.processes} processes`, processes: config.processes },
};
const CELLS = {
  mutex: `${config.readers} loops, a mutex each on its own resource (uncontended)`,
  read: `${config.readers} readers of one resource`,
  rw: `${config.readers} readers and ${config.writers} writers of one resource, a writer pausing ${config.writePauseMs} ms between writes`,
  rw0: `${config.readers} readers and ${config.writers} writers of one resource, writers back to back`,
};
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const servers = await startServers(5);
const admin = servers.map((s) => internalClient(s.url));
const serverVersion = (await admin[0].info('server')).match(/redis_version:(\S+)/)?.[1];
const urlsFor = (nodes) => servers.slice(0, nodes).map((s) => s.url);
const maxProcesses = Math.max(...config.shapes.map((s) => SHAPES[s].processes));
const children = await forkWorkers(maxProcesses);

/** `total` loops over `n` processes, as even as can be: how many go to process `i`. */
const share = (total, n, i) => Math.floor(total / n) + (i < total % n ? 1 : 0);

/** The loop groups of a cell, per process. */
function planOf(cell, shape, key) {
  const n = SHAPES[shape].processes;
  const hold = config.holdMs;
  return Array.from({ length: n }, (_, i) => {
    if (cell === 'mutex') return [{ role: 'mutex', loops: share(config.readers, n, i), key: `${key}:p${i}`, distinct: true, holdMs: hold }];
    const groups = [{ role: 'read', loops: share(config.readers, n, i), key, holdMs: hold }];
    if (cell === 'rw' || cell === 'rw0') {
      // Writers in processes spread apart (0 and n/2 of 16), beside readers.
      const writers = Array.from({ length: config.writers }, (_, w) => Math.floor((w * n) / config.writers)).filter((p) => p === i).length;
      if (writers) groups.push({ role: 'write', loops: writers, key, holdMs: hold, pauseMs: cell === 'rw' ? config.writePauseMs : 0 });
    }
    return groups.filter((g) => g.loops > 0);
  });
}

/** One run of `lib` on a cell, reduced to its figures. */
async function runCell(lib, nodes, shape, cell, tag, ms) {
  await Promise.all(admin.map((c) => c.flushall()));
  const run = await runPlan(children, planOf(cell, shape, `rw:${tag}`), {
    lib,
    urls: urlsFor(nodes),
    opts: { ttl: config.ttl, wait: config.wait },
    ms,
    admin: admin.slice(0, nodes),
  });
  const main = run.groups[cell === 'mutex' ? 'mutex' : 'read'];
  const writes = run.groups.write;
  const mainWaits = waitFigures(main.waits);
  const ops = mainWaits.grants + (writes ? waitFigures(writes.waits).grants : 0);
  const { perSec, inUse } = windowFigures(main.intervals, run.window);
  let holdUs = 0;
  let holds = 0;
  for (const list of main.intervals)
    for (let i = 0; i < list.length; i += 2) {
      holdUs += list[i + 1] - list[i];
      holds++;
    }
  const r = {
    opsPerSec: perSec,
    inUse,
    maxTogether: maxOverlap(main.intervals),
    meanWaitMs: mainWaits.meanWaitMs,
    p99WaitMs: mainWaits.p99WaitMs,
    maxWaitMs: mainWaits.maxWaitMs,
    readHoldMs: holdUs / holds / 1000,
    gaveUps: main.gaveUps + (writes?.gaveUps ?? 0),
    cpuUsPerOp: run.cpuUs / ops,
    serverUsPerOp: run.serverUs / ops,
    commandsPerOp: run.commands / ops,
    error: main.errors[0] ?? writes?.errors[0],
  };
  if (writes) {
    const w = waitFigures(writes.waits);
    const overlap = readWriteOverlap(main.intervals, writes.intervals);
    Object.assign(r, {
      writesPerSec: windowFigures(writes.intervals, run.window).perSec,
      writeMeanWaitMs: w.meanWaitMs,
      writeMaxWaitMs: w.maxWaitMs,
      writeMaxWaitHolds: w.maxWaitMs / r.readHoldMs,
      writerShared: overlap.writerShared,
      maxWriters: overlap.maxWriters,
    });
  }
  return r;
}

const COLUMNS = {
  opsPerSec: ['locks/s', 0],
  ratio: ['× mutex (same round)', 2],
  inUse: ['holders (mean)', 1],
  maxTogether: ['max holders at once', 0],
  meanWaitMs: ['mean wait ms', 2],
  p99WaitMs: ['p99 wait ms', 1],
  maxWaitMs: ['max wait ms', 1],
  readHoldMs: ['hold ms (mean)', 2],
  writesPerSec: ['writes/s', 0],
  writeMeanWaitMs: ['writer mean wait ms', 1],
  writeMaxWaitMs: ['writer max wait ms (all rounds)', 1],
  writeMaxWaitHolds: ['in read holds (all rounds)', 1],
  writerShared: ['writer not alone (all rounds)', 0],
  gaveUps: ['gave up', 0],
  cpuUsPerOp: ['client CPU µs/lock', 1],
  serverUsPerOp: ['server CPU µs/lock', 1],
  commandsPerOp: ['cmds/lock', 1],
};
/** Reported as the worst over the rounds, not the median. */
const WORST = { maxTogether: Math.max, writeMaxWaitMs: Math.max, writeMaxWaitHolds: Math.max, writerShared: (...v) => v.reduce((a, b) => a + b, 0), gaveUps: (...v) => v.reduce((a, b) => a + b, 0) };

/** results[`${nodes}|${shape}`][lib][cell] = per-round figures */
const results = {};
try {
  for (const nodes of config.topologies)
    for (const shape of config.shapes)
      for (const lib of config.libs) for (const cell of config.cells) await runCell(lib, nodes, shape, cell, `warm:${lib}:${cell}`, config.warmMs);
  log('warmed up');
  const runs = config.libs.flatMap((lib) => config.cells.map((cell) => [lib, cell]));
  for (let round = 0; round < config.rounds; round++)
    for (const nodes of config.topologies)
      for (const shape of config.shapes) {
        const order = runs.map((_, i) => runs[(i + round) % runs.length]);
        const got = {};
        for (const [lib, cell] of order) {
          const r = await runCell(lib, nodes, shape, cell, `${round}:${lib}:${cell}`, config.runMs);
          (got[lib] ??= {})[cell] = r;
          (((results[`${nodes}|${shape}`] ??= {})[lib] ??= {})[cell] ??= []).push(r);
          log(
            `round ${round + 1} ${nodes} node(s) ${shape} ${cell} ${lib}: locks/s ${r.opsPerSec.toFixed(0)}, max together ${r.maxTogether}${r.writesPerSec !== undefined ? `, writes/s ${r.writesPerSec.toFixed(0)}, writer max wait ${r.writeMaxWaitMs?.toFixed(1)} ms, writer not alone ${r.writerShared}` : ''}, CPU µs/lock ${r.cpuUsPerOp.toFixed(1)}${r.gaveUps ? `, gave up ${r.gaveUps} (${r.error})` : ''}`,
          );
        }
        // Against the mutex cell of the same round and library.
        for (const [lib, cells] of Object.entries(got))
          for (const r of Object.values(cells)) r.ratio = cells.mutex ? r.opsPerSec / cells.mutex.opsPerSec : undefined;
      }
} finally {
  await stopWorkers(children);
  await Promise.all(admin.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.stop()));
}

const report = renderReport();
console.log('\n' + report);
if (!args['no-write']) {
  const out = args.out ? String(args.out) : join(here, 'RWLOCK.md');
  writeFileSync(out, report);
  console.log(`written to ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function renderReport() {
  const lines = [
    '# Read/write lock benchmark',
    '',
    `Command: \`node bench/rwlock.mjs${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, redis-server ${serverVersion}, ${process.platform}.`,
    `${OURS} at its default settings: \`acquire(key)\` (mutex), \`acquire(key, { mode: 'read' })\`, \`acquire(key, { mode: 'write' })\`. Every hold ${config.holdMs} ms, a loop asks again at once after its release; lease ${config.ttl / 1000} s, wait up to ${config.wait / 1000} s.`,
    `Cells: ${config.cells.map((c) => `${c} = ${CELLS[c]}`).join('; ')}.`,
    `Medians of ${config.rounds} interleaved rounds of ${config.runMs / 1000} s per run (every cell once per round, the order rotating), after an unmeasured ${config.warmMs / 1000} s run of each; client processes long-lived, a new library instance per run.`,
    'locks/s: mutexes (mutex cell) or read locks (read, rw) granted within the window, per second; × mutex: against the mutex cell of the same round, then the median; holders: readers (or mutex holders) at an average instant; max holders at once: readers together (mutex cell: distinct resources); writer max wait: the longest any writer waited, over every round, and the most of any round in mean read holds of that round; writer not alone: instants a writer held together with a reader or another writer, over every round (must be 0); CPU per lock: one acquire and its release (reads and writes), the client processes (process.cpuUsage) and all lock nodes (INFO cpu).',
    '',
  ];
  for (const nodes of config.topologies)
    for (const shape of config.shapes)
      for (const lib of config.libs) {
        const rows = results[`${nodes}|${shape}`]?.[lib];
        if (!rows) continue;
        lines.push(`## ${nodes} node${nodes > 1 ? 's' : ''}, ${SHAPES[shape].title}${config.libs.length > 1 ? `, ${lib}` : ''}`, '');
        const columns = Object.entries(COLUMNS).filter(([k]) => Object.values(rows).some((list) => list.some((r) => r[k] !== undefined)));
        const header = ['cell', ...columns.map(([, [label]]) => label)];
        lines.push(`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i ? '---:' : '---')).join('|')}|`);
        for (const cell of config.cells) {
          const list = rows[cell];
          if (!list) continue;
          const value = (k) => {
            const values = list.map((r) => r[k]).filter((v) => v !== undefined);
            if (!values.length) return undefined;
            return WORST[k] ? WORST[k](...values) : median(values);
          };
          lines.push(`| ${cell} | ${columns.map(([k, [, digits]]) => value(k)?.toFixed(digits) ?? '').join(' | ')} |`);
        }
        lines.push('');
        for (const cell of config.cells.filter((c) => c !== 'mutex' && rows[c]?.[0]?.ratio !== undefined))
          lines.push(`Round by round, ${cell} ÷ mutex: ${rows[cell].map((r) => r.ratio.toFixed(2)).join(', ')}.`);
        lines.push('');
      }
  return lines.join('\n') + '\n';
}
