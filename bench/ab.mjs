// `npm run bench:ab -- --a=<rev>`: the whole bench, this library at an earlier
// revision (A) against this working tree's build (B), to tell a change's
// effect from the machine's noise. It writes no second bench: it runs the
// bench's own scripts, with A loaded beside B through BENCH_BASELINE (see
// bench/libs.mjs), and reads their output:
//   run      bench/run.mjs: scenarios 1-4 (seq, seqfar, par, hot, hotproc,
//            held) in one long-lived process (3b: 16 long-lived workers)
//   user     bench/user-path.mjs: uncontended pairs from fresh (cold) and
//            long-lived (warm) job processes, the client pinned to core 0
//            and the servers to core 1, and unpinned
//   cluster  bench/cluster.mjs: a Redis Cluster as the one node (client
//            process pinned to core 0); this one has no BENCH_BASELINE, so
//            each round runs it once for A (the current bench scripts beside
//            A's dist, in a directory of their own) and once for B
// In run and user, A and B run in every round, in an order that alternates
// from round to round (AB, BA, ...), on the same servers; in cluster, one
// invocation each per round, alternating likewise.
//
// A is built outside this clone: `git archive <rev> | tar -x` into
// <dir>/<sha>, its node_modules a link to this clone's when the lockfiles
// are identical (else `npm ci --prefer-offline` there), then its own
// `npm run build`. The build is kept and reused (--rebuild to redo it).
// B is this clone's dist/ (`npm run bench:ab` builds it first), or --b=<rev>,
// built like A.
//
// Printed per cell: medians of A and B, B/A, A's round-to-round spread
// (max / min over its rounds) and B's, B/A round by round, client CPU per
// op, and a verdict: B/A beyond the larger spread is a gain or a loss,
// within it noise (under 3 rounds, too few to tell). Options:
//   --a=REV            A, the baseline revision (default HEAD)
//   --b=REV            B from a revision too (default: this clone's dist)
//   --parts=run,user,cluster   (default all; quick: run,user)
//   --rounds=N         rounds of every part (default: each bench's own, 3/5/3)
//   --quick            a smoke (about 30 s once A is built): 2 rounds;
//                      run: --quick --scenarios=seq,hot --nodes=1; user:
//                      --nodes=1 --pin=on --process=cold,warm --scenarios=seq
//                      --keys=distinct --pairs=1000; cluster: --quick
//   --run-args="..."   more options for bench/run.mjs (they win over the
//   --user-args="..."  presets), e.g. --run-args="--scenarios=hot,hotproc
//   --cluster-args="..."  --nodes=5"; see each script's header
//   --dir=PATH         builds, logs and reports (default /tmp/nestjs-redlock-ab)
//   --rebuild          build A (and B) again
//   --out=FILE         the report's path (default <dir>/ab-<time>.md)
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, parseFlags } from './util.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = parseFlags();
const quick = Boolean(args.quick);
const list = (value) => String(value).split(',').filter(Boolean);
const words = (value) => (value === undefined || value === true ? [] : String(value).split(/\s+/).filter(Boolean));
const root = resolve(String(args.dir ?? '/tmp/nestjs-redlock-ab'));
const parts = list(args.parts ?? (quick ? 'run,user' : 'run,user,cluster'));
const rounds = args.rounds !== undefined ? Number(args.rounds) : quick ? 2 : undefined;
for (const part of parts) if (!['run', 'user', 'cluster'].includes(part)) throw new Error(`unknown part ${part} (run, user, cluster)`);
const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
mkdirSync(join(root, 'logs'), { recursive: true });
const logFile = join(root, 'logs', `ab-${stamp}.log`);
const out = resolve(String(args.out ?? join(root, `ab-${stamp}.md`)));
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

/** Runs a command to completion; throws with its output when it fails. */
function run(cmd, argv, options = {}) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  appendFileSync(logFile, `$ ${cmd} ${argv.join(' ')}\n${r.stdout ?? ''}${r.stderr ?? ''}\n`);
  if (r.error || r.status !== 0)
    throw new Error(`${cmd} ${argv.join(' ')} failed (${r.error ?? `exit ${r.status}`}):\n${(r.stdout + r.stderr).slice(-3000)}`);
  return r.stdout;
}
const git = (...argv) => run('git', ['-C', repo, ...argv]).trim();

/** The newest mtime (ms) of the files under `dir`. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * `rev` built outside the clone, in <root>/<sha>: its tree from git
 * archive, this clone's node_modules linked when the lockfiles are the same
 * (else installed there), its own build script. Reused once built.
 */
function prepare(rev) {
  const sha = git('rev-parse', '--verify', `${rev}^{commit}`);
  const subject = git('log', '-1', '--format=%s', sha);
  const dir = join(root, sha.slice(0, 12));
  const marker = join(dir, '.ab-built');
  if (existsSync(marker) && !args.rebuild) {
    const built = JSON.parse(readFileSync(marker, 'utf8'));
    log(`${rev} (${sha.slice(0, 7)}): the build in ${dir} (${built.deps})`);
    return { rev, sha, subject, dir, deps: built.deps };
  }
  log(`${rev} (${sha.slice(0, 7)}): extracting and building in ${dir}`);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  let deps;
  try {
    run('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', repo, sha, tmp]);
    const lock = (at) => (existsSync(join(at, 'package-lock.json')) ? readFileSync(join(at, 'package-lock.json'), 'utf8') : undefined);
    if (lock(tmp) !== undefined && lock(tmp) === lock(repo)) {
      symlinkSync(join(repo, 'node_modules'), join(tmp, 'node_modules'), 'dir');
      deps = 'node_modules linked to the clone\'s (same lockfile)';
    } else {
      log(`${sha.slice(0, 7)}: lockfile differs from the clone's: npm ci --prefer-offline`);
      run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: tmp });
      deps = 'own node_modules (npm ci: lockfile differs)';
    }
    run('npm', ['run', 'build'], { cwd: tmp });
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
  writeFileSync(join(tmp, '.ab-built'), JSON.stringify({ rev, sha, deps, builtAt: new Date().toISOString() }) + '\n');
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  log(`${sha.slice(0, 7)}: built`);
  return { rev, sha, subject, dir, deps };
}

/**
 * A directory that runs this clone's bench and scripts against `target`'s
 * dist: bench/ and scripts/ copied, dist/ and node_modules/ linked (the
 * bench imports ../dist/esm/index.js).
 */
function runner(role, target) {
  const dir = join(root, `runner-${role}-${target.sha.slice(0, 12)}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(repo, 'bench'), join(dir, 'bench'), { recursive: true });
  cpSync(join(repo, 'scripts'), join(dir, 'scripts'), { recursive: true });
  cpSync(join(target.dir, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(target.dir, 'dist'), join(dir, 'dist'), 'dir');
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/**
 * One bench script as a child process; its progress lines are echoed, its
 * whole output kept (and logged). Resolves to its stdout.
 */
function bench(label, cwd, script, argv, env = {}) {
  appendFileSync(logFile, `\n$ (${cwd}) ${Object.entries(env).map(([k, v]) => `${k}=${v} `).join('')}node ${script} ${argv.join(' ')}\n`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [join(cwd, script), ...argv], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      appendFileSync(logFile, chunk);
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) if (/^\[\s*\d+ s\] /.test(line)) console.log(`      ${label} ${line}`);
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      appendFileSync(logFile, chunk);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`${script} ${argv.join(' ')} ended with ${signal ?? `exit ${code}`}:\n${(stdout + stderr).slice(-3000)}`));
    });
  });
}

/** The markdown tables of a bench's report: { title, header, rows } each, rows as cell lists. */
function tables(text) {
  const found = [];
  let title = '';
  let current;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) {
      title = line.replace(/^#+\s*/, '');
      current = undefined;
    } else if (line.startsWith('|')) {
      const cells = line.split('|').slice(1, -1).map((c) => c.trim().replace(/\*\*/g, ''));
      if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
      if (!current) found.push((current = { title, header: cells, rows: [] }));
      else current.rows.push(cells);
    } else current = undefined;
  }
  return found;
}

const A_NAME = 'baseline';
const B_NAME = 'nestjs-redlock';

/**
 * A cell of the report: per-round values of A and B (paired by round),
 * their client CPU per op (medians), whether higher is better.
 */
function cell(cells, part, name, metric, higherIsBetter = true) {
  const key = `${part}|${name}`;
  return (cells[key] ??= { part, name, metric, higherIsBetter, A: [], B: [], cpu: {} });
}

/** bench/run.mjs's output: per-round main figures from its progress lines, CPU per op from its tables. */
function parseRun(text, cells) {
  const SCENARIO = { '1.': 'seq', '1b.': 'seqfar', '2.': 'par', '3a.': 'hot', '3b.': 'hotproc', '4.': 'held' };
  for (const [, , nodes, scenario, lib, metric, value] of text.matchAll(
    /^\[\s*\d+ s\] round (\d+) (\d+) node\(s\) (\w+) (nestjs-redlock|baseline): (.+) ([\d.]+)$/gm,
  ))
    cell(cells, 'run', `${scenario}, ${nodes} node${nodes === '1' ? '' : 's'}`, metric)[lib === A_NAME ? 'A' : 'B'].push(Number(value));
  for (const [, nodes, lib, cpu] of text.matchAll(/^\[\s*\d+ s\] (\d+) node\(s\) held (nestjs-redlock|baseline): CPU % core ([\d.]+)/gm))
    cell(cells, 'run', `held, ${nodes} node${nodes === '1' ? '' : 's'}`, 'CPU % of a core', false)[lib === A_NAME ? 'A' : 'B'].push(Number(cpu));
  for (const table of tables(text)) {
    const scenario = SCENARIO[table.title.split(' ')[0]];
    const nodes = /, (\d+) nodes?$/.exec(table.title)?.[1];
    const c = scenario && nodes ? cells[`run|${scenario}, ${nodes} node${nodes === '1' ? '' : 's'}`] : undefined;
    if (!c) continue;
    const column = table.header.findIndex((h) => h.startsWith('CPU µs/'));
    for (const row of table.rows) {
      if (row[0] !== A_NAME && row[0] !== B_NAME) continue;
      const side = row[0] === A_NAME ? 'A' : 'B';
      if (column >= 0) c.cpu[side] = Number(row[column]);
      // What must stay 0 (medians over rounds).
      for (const name of ['violations', 'gave up', 'lost', 'acquire failed']) {
        const value = Number(row[table.header.indexOf(name)]);
        if (value > 0) (c.problems ??= []).push(`${side}: ${name} ${value} (median)`);
      }
    }
  }
}

/** bench/user-path.mjs's output: per-round pairs/s from its progress lines, client CPU per pair from its table. */
function parseUser(text, cells) {
  // Each library's short name: its side, and the prefix of its cells (the
  // core's cells are named as before; LockService's start with "service").
  const SHORT = {
    baseline: ['A', ''],
    'redlock-core': ['B', ''],
    'baseline-service': ['A', 'service '],
    service: ['B', 'service '],
  };
  for (const [, cellName, entries] of text.matchAll(/^\[\s*\d+ s\] round \d+ (\S+\|\S+\|\S+\|\S+\|\S+): (.+)$/gm)) {
    const name = cellName.replaceAll('|', ' ');
    for (const entry of entries.split(', ')) {
      const m = /^(\S+) ([\d.]+)\/([\d.]+)$/.exec(entry);
      if (!m || !SHORT[m[1]]) continue;
      const [side, prefix] = SHORT[m[1]];
      cell(cells, 'user', prefix + name, 'pairs/s')[side].push(Number(m[2]));
    }
  }
  const table = tables(text).find((t) => t.header[0] === 'nodes' && t.header.includes('keys'));
  if (!table) return;
  for (const row of table.rows) {
    for (const [short, [side, prefix]] of Object.entries(SHORT)) {
      const c = cells[`user|${prefix}${row.slice(0, 5).join(' ')}`];
      const column = table.header.indexOf(short);
      if (c && column >= 0) c.cpu[side] = Number(row[column].split(' / ')[1]);
    }
  }
}

/** One round of bench/cluster.mjs (--rounds=1): locks/s and client µs per lock of every target. */
function parseCluster(text, cells, side) {
  let found = 0;
  for (const [, target, rate, clientUs, errors] of text.matchAll(
    /^\[\s*\d+ s\] round \d+ (.+?): ([\d.]+) locks\/s, client ([\d.]+) µs\/lock.*?(?:, (\d+) errors:.*)?$/gm,
  )) {
    const c = cell(cells, 'cluster', target, 'locks/s');
    if (errors) (c.problems ??= []).push(`${side}: ${errors} errors in a round`);
    c[side].push(Number(rate));
    ((c.cpuRounds ??= { A: [], B: [] })[side]).push(Number(clientUs));
    c.cpu[side] = median(c.cpuRounds[side]);
    found++;
  }
  return found;
}

// ---------------------------------------------------------------------------

const headOf = () => {
  const head = git('rev-parse', 'HEAD');
  const dirty = git('status', '--porcelain', '--', 'lib', 'package.json', 'package-lock.json', 'tsconfig.build.json', 'tsconfig.build.cjs.json');
  return `${head.slice(0, 7)}${dirty ? ' + uncommitted changes under lib/' : ''}`;
};

const A = prepare(String(args.a ?? 'HEAD'));
const B = args.b ? prepare(String(args.b)) : undefined;
const bDir = B ? runner('b', B) : repo;
if (!B) {
  const index = join(repo, 'dist', 'esm', 'index.js');
  if (!existsSync(index)) throw new Error('dist/ is missing: run `npm run build` (or use `npm run bench:ab`)');
  if (newest(join(repo, 'lib')) > statSync(index).mtimeMs)
    log('warning: lib/ has files newer than dist/: B may not be the working tree (`npm run bench:ab` builds first)');
}
const aLabel = `${A.rev} = ${A.sha.slice(0, 7)} "${A.subject.slice(0, 90)}"`;
const bLabel = B ? `${B.rev} = ${B.sha.slice(0, 7)} "${B.subject.slice(0, 90)}"` : `this clone's dist/ (working tree at ${headOf()}, built ${statSync(join(repo, 'dist', 'esm', 'index.js')).mtime.toISOString().slice(0, 16)}Z)`;
log(`A: ${aLabel}`);
log(`B: ${bLabel}`);
log(`log: ${logFile}`);

const env = { BENCH_BASELINE: A.dir };
const libs = `--libs=${A_NAME},${B_NAME}`;
const roundArg = rounds !== undefined ? [`--rounds=${rounds}`] : [];
const commands = [];
const cells = {};

if (parts.includes('run')) {
  const argv = ['--no-write', libs, ...roundArg, ...(quick ? ['--quick', '--scenarios=seq,hot', '--nodes=1'] : []), ...words(args['run-args'])];
  commands.push(`BENCH_BASELINE=${A.dir} node bench/run.mjs ${argv.join(' ')}`);
  log(`run: node bench/run.mjs ${argv.join(' ')}`);
  parseRun(await bench('run', bDir, 'bench/run.mjs', argv, env), cells);
}
if (parts.includes('user')) {
  const argv = [
    '--no-write',
    // The core of each side, and each side's LockService with per-call options.
    `${libs},baseline-service,nestjs-redlock LockService`,
    ...roundArg,
    ...(quick ? ['--nodes=1', '--pin=on', '--process=cold,warm', '--scenarios=seq', '--keys=distinct', '--pairs=1000'] : []),
    ...words(args['user-args']),
  ];
  commands.push(`BENCH_BASELINE=${A.dir} node bench/user-path.mjs ${argv.join(' ')}`);
  log(`user: node bench/user-path.mjs ${argv.join(' ')}`);
  parseUser(await bench('user', bDir, 'bench/user-path.mjs', argv, env), cells);
}
if (parts.includes('cluster')) {
  const aDir = runner('a', A);
  const argv = ['--no-write', '--rounds=1', ...(quick ? ['--quick'] : []), ...words(args['cluster-args'])];
  const n = rounds ?? 3;
  commands.push(`node bench/cluster.mjs ${argv.join(' ')}, ${n} times from ${aDir} (A) and from ${bDir === repo ? 'this clone' : bDir} (B), alternating`);
  for (let round = 0; round < n; round++) {
    for (const side of round % 2 ? ['B', 'A'] : ['A', 'B']) {
      log(`cluster, round ${round + 1}, ${side}: node bench/cluster.mjs ${argv.join(' ')}`);
      const text = await bench(`cluster ${side}`, side === 'A' ? aDir : bDir, 'bench/cluster.mjs', argv);
      if (!parseCluster(text, cells, side)) throw new Error(`no figures in bench/cluster.mjs's output (see ${logFile})`);
    }
  }
}

// ---------------------------------------------------------------------------

const fmt = (v, digits) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits));
const digitsOf = (v) => (v === undefined ? 0 : Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2);
const gmean = (values) => Math.exp(values.reduce((a, x) => a + Math.log(x), 0) / values.length);

function row(c) {
  const a = median(c.A);
  const b = median(c.B);
  const ratio = a && b !== undefined ? b / a : undefined;
  const spreadOf = (v) => (v.length > 1 && Math.min(...v) > 0 ? Math.max(...v) / Math.min(...v) : undefined);
  const spread = spreadOf(c.A);
  const spreadB = spreadOf(c.B);
  const paired = c.A.map((x, i) => (c.B[i] !== undefined && x ? c.B[i] / x : undefined)).filter((x) => x !== undefined);
  // Better = B/A above 1 for a rate, below 1 for a CPU share.
  const gain = ratio === undefined ? undefined : c.higherIsBetter ? ratio : 1 / ratio;
  // The noise: the larger of the two sides' own round-to-round spreads.
  const noise = Math.max(spread ?? 0, spreadB ?? 0);
  let verdict = 'one run';
  if (spread !== undefined && gain !== undefined) {
    verdict = gain < 1 / noise ? '**loss**' : gain > noise ? 'gain' : 'noise';
    if (c.A.length < 3) verdict += ` (${c.A.length} rounds: too few to tell)`;
  }
  const cpuA = c.cpu.A;
  const cpuB = c.cpu.B;
  return {
    gain,
    verdict,
    cells: [
      c.name,
      c.metric,
      fmt(a, digitsOf(a)),
      fmt(b, digitsOf(b)),
      fmt(ratio, 3),
      spread === undefined ? '–' : `${((spread - 1) * 100).toFixed(1)} %`,
      spreadB === undefined ? '–' : `${((spreadB - 1) * 100).toFixed(1)} %`,
      paired.length ? `${Math.min(...paired).toFixed(3)}–${Math.max(...paired).toFixed(3)}` : '–',
      fmt(cpuA, 1),
      fmt(cpuB, 1),
      cpuA && cpuB !== undefined ? fmt(cpuB / cpuA, 3) : '–',
      verdict,
    ],
  };
}

const TITLES = {
  run: 'bench/run.mjs: scenarios 1-4, one long-lived process (3b: 16 worker processes), unpinned',
  user: 'bench/user-path.mjs: nodes, pin, process (cold = a fresh process per job, warm = long-lived), scenario, keys',
  cluster: 'bench/cluster.mjs: a Redis Cluster as the one node, client process on core 0',
};
const lines = [
  '# A/B against an earlier revision',
  '',
  `Command: \`node bench/ab.mjs${process.argv.length > 2 ? ' ' + process.argv.slice(2).join(' ') : ''}\`, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}.`,
  '',
  `- A: ${aLabel}, built in ${A.dir} (${A.deps}).`,
  `- B: ${bLabel}.`,
  ...(A.deps.startsWith('own') ? ['- A has node_modules of its own: its ioredis may not be B\'s, and run.mjs counts commands only on the ioredis the bench loads.'] : []),
  ...commands.map((c) => `- \`${c}\``),
  '',
  'A and B run in every round, the order alternating from round to round. Columns: medians over rounds; B/A; A spread, B spread = (max / min − 1) of that side\'s own rounds, the round-to-round noise; B/A by round = the range of B ÷ A within a round; client CPU µs per op (pair, critical section or lock; medians); verdict: B/A beyond the larger of the two spreads (a loss or a gain), or within it (noise); under 3 rounds a spread says little. For CPU % (held) lower is better.',
  '',
];
const summary = [];
for (const part of parts) {
  const rows = Object.values(cells).filter((c) => c.part === part);
  if (!rows.length) continue;
  lines.push(`## ${TITLES[part]}`, '');
  const header = ['cell', 'metric', 'A', 'B', 'B/A', 'A spread', 'B spread', 'B/A by round', 'A CPU µs/op', 'B CPU µs/op', 'CPU B/A', 'verdict'];
  lines.push(`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`);
  const gains = [];
  const problems = [];
  let losses = 0;
  for (const c of rows) {
    const r = row(c);
    lines.push(`| ${r.cells.join(' | ')} |`);
    if (r.gain) gains.push(r.gain);
    if (r.verdict.startsWith('**loss**')) losses++;
    if (c.problems) problems.push(`- ${c.name}: ${c.problems.join('; ')}`);
  }
  lines.push('');
  if (problems.length) lines.push('Not 0 where it must be (see the log):', '', ...problems, '');
  if (gains.length)
    summary.push(`- ${part}: B against A, geometric mean over ${gains.length} cells: ${gmean(gains).toFixed(3)} (above 1: B better); ${losses} cell(s) beyond A's spread on the losing side.`);
}
lines.push('## Summary', '', ...summary, '', `Full output of the benches: ${logFile}`);
const report = lines.join('\n') + '\n';
console.log('\n' + report);
writeFileSync(out, report);
console.log(`written to ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
