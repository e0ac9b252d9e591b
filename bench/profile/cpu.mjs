// Client CPU and allocations per uncontended lock+unlock pair on the user's
// path (issue 26), for finding and removing what ours spends that
// node-redlock does not. Every library runs in this one process on the same
// local servers, in blocks interleaved round by round (rotating order), so
// the machine's noise hits all alike; medians over rounds.
//   svc:<build>   LockService.acquire(key, { ttl, waitTimeout }) + release,
//                 in a Nest application context (RedlockModule.forRoot({ clients }))
//   core:<build>  Redlock.acquire(key) + release (instance options only)
//   node-redlock  redlock 5.0.0-beta.2, acquire([key], ttl) + release
//   layer:<0|1|2>[:<build>]  a build's lock path cut at a layer, 1 node (see createLayer)
// Cells: nodes (1, 5) × seq (one loop) / par (64 loops) × distinct (a new
// key per pair) / same (each loop re-locks its own key).
// Per block: client CPU µs per pair (process.cpuUsage), bytes allocated per
// pair (heap growth plus what each GC freed, from v8.GCProfiler) and
// scavenges per 1,000 pairs.
// --cold: each (library, cell) in a fresh process instead: the first 200
// pairs, then the next 2,000, reported apart (setup not counted).
// Options: --rounds=5 --pairs=2000 --nodes=1,5 --modes=seq,par
//   --keys=distinct,same --libs=svc:head,core:head,node-redlock --ttl=10000
//   --wait=0 (per-call and instance waitTimeout) --pin (this process on core
//   0, the servers on core 1) --cold --prof=<lib> (runs only that library:
//   for node --cpu-prof) --builds=head=<esm dir>,base=<esm dir> (A/B of
//   builds; default head=dist/esm) --child-flags='--trace-opt ...' (node
//   flags of the --cold children; with --trace-opt the table adds
//   TurboFan's compile ms during each phase) --child-log=<file> (their
//   other output, for jit.mjs; with --cpu-prof, the `@@phase` marks give
//   top.mjs its --from/--to window).
// Run after `npm run build`: node bench/profile/cpu.mjs [options]
// A/B of a change: build each side with
//   npx tsc -p tsconfig.build.json --outDir .scratch/profile/<name>
// and pass --builds=base=.scratch/profile/base,head=.scratch/profile/head.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import NodeRedlock from 'redlock';
import { parseFlags, pinApart } from '../util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = parseFlags();
const list = (name, fallback) => String(args[name] ?? fallback).split(',').filter(Boolean);
const builds = Object.fromEntries(
  list('builds', `head=${resolve(here, '../../dist/esm')}`).map((b) => {
    const [name, dir] = b.split('=');
    return [name, resolve(dir)];
  }),
);
const config = {
  rounds: Number(args.rounds ?? 5),
  pairs: Number(args.pairs ?? 2000),
  nodes: list('nodes', '1,5').map(Number),
  modes: list('modes', 'seq,par'),
  keys: list('keys', 'distinct,same'),
  libs: args.prof ? [args.prof] : list('libs', [...Object.keys(builds).flatMap((b) => [`svc:${b}`, `core:${b}`]), 'node-redlock'].join(',')),
  ttl: Number(args.ttl ?? 10_000),
  wait: Number(args.wait ?? 0),
};
const WORKERS = 64;

const modules = {};
async function load(build) {
  modules[build] ??= await import(resolve(builds[build], 'index.js'));
  return modules[build];
}

/**
 * The lock path of this build (dist/esm) cut at a layer, 1 node, for
 * finding which layer a cold process pays for: `layer:0` the two scripts
 * by EVALSHA on an ioredis client, nothing else; `layer:1` through
 * `RedlockNode.run` (write coalescing, NOSCRIPT handling) with a pooled
 * value; `layer:2` through `poll` (the quorum collector with its node
 * timeout) as every operation sends. The rest (`core:`) adds the acquire
 * and release operations: options, local lines, the Lock, bookkeeping.
 */
async function createLayer(layer, url, build) {
  const { ttl } = config;
  const core = resolve(builds[build], 'core');
  const { ACQUIRE_SCRIPT, RELEASE_SCRIPT, declareMetaKeys } = await import(resolve(core, 'scripts/index.js'));
  const { RedlockNode } = await import(resolve(core, 'nodes/redlock-node.js'));
  const { poll } = await import(resolve(core, 'nodes/poll.js'));
  const { randomValue } = await import(resolve(core, 'util/lock-value.js'));
  const client = new Redis(url, { maxRetriesPerRequest: 0 });
  await client.script('LOAD', ACQUIRE_SCRIPT.source);
  await client.script('LOAD', RELEASE_SCRIPT.source);
  const nodes = [new RedlockNode(client, 'node', true)];
  const decided = (tally) => tally.granted >= 1;
  const send = (script, key, args, granted) => {
    if (layer === 0) {
      // As the library sends it: the meta keys the script may touch
      // declared (builds before declareMetaKeys sent the key alone).
      const call = declareMetaKeys ? declareMetaKeys(script, [key], args) : { keys: [key], args };
      return client.evalsha(script.sha, call.keys.length, ...call.keys, ...call.args);
    }
    if (layer === 1) return nodes[0].run(script, [key], args);
    return poll(nodes, (node) => node.run(script, [key], args), (reply) => (granted(reply) ? 'granted' : 'busy'), 1000, decided);
  };
  return {
    pair: async (key) => {
      const value = layer === 0 ? randomBytes(16).toString('hex') : randomValue();
      const k = `redlock:${key}`;
      await send(ACQUIRE_SCRIPT, k, [value, ttl, 'redlock:'], (r) => r === 1);
      await send(RELEASE_SCRIPT, k, [value, 'redlock:'], (r) => r >= 2);
    },
    close: () => client.quit(),
  };
}

/** One library on `urls`, with the surface every block uses. */
async function createLib(name, urls) {
  const { ttl, wait } = config;
  if (name === 'node-redlock') {
    const clients = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 0 }));
    await Promise.all(clients.map((c) => c.ping()));
    const redlock = new NodeRedlock(clients, { retryCount: wait > 0 ? Math.ceil(wait / 10) : 0, retryDelay: 10, retryJitter: 5 });
    redlock.on('error', () => undefined);
    return {
      pair: async (key) => (await redlock.acquire([key], ttl)).release(),
      close: () => Promise.all(clients.map((c) => c.quit())),
    };
  }
  if (name.startsWith('layer:')) return createLayer(Number(name.split(':')[1]), urls[0], name.split(':')[2] ?? 'head');
  const [kind, build] = name.split(':');
  const ours = await load(build);
  if (kind === 'svc') {
    const app = await NestFactory.createApplicationContext(ours.RedlockModule.forRoot({ clients: urls }), { logger: false });
    const locks = app.get(ours.LockService);
    const options = { ttl, waitTimeout: wait };
    return { pair: async (key) => (await locks.acquire(key, options)).release(), close: () => app.close() };
  }
  const redlock = new ours.Redlock({ clients: urls, ttl, waitTimeout: wait });
  await redlock.ready();
  return { pair: async (key) => (await redlock.acquire(key)).release(), close: () => redlock.quit() };
}

let tagSeq = 0;
/** `pairs` pairs by one loop or WORKERS loops; returns per-pair figures. */
async function block(lib, mode, keys, pairs) {
  const workers = mode === 'par' ? WORKERS : 1;
  const per = Math.ceil(pairs / workers);
  const tag = `${process.pid}:${tagSeq++}`;
  const loop = async (w) => {
    for (let i = 0; i < per; i++) await lib.pair(keys === 'same' ? `p:${mode}:${w}` : `p:${tag}:${w}:${i}`);
  };
  const gc = new v8.GCProfiler();
  gc.start();
  const heap0 = v8.getHeapStatistics().used_heap_size;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: workers }, (_, w) => loop(w)));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const heap1 = v8.getHeapStatistics().used_heap_size;
  const { statistics } = gc.stop();
  let freed = 0;
  let scavenges = 0;
  for (const s of statistics) {
    freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize;
    if (s.gcType === 'Scavenge') scavenges++;
  }
  const n = per * workers;
  return { cpu: (cpu.user + cpu.system) / n, alloc: (heap1 - heap0 + freed) / n, scav: (1000 * scavenges) / n, rate: (1000 * n) / wall };
}

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// A child of --cold: one library, one cell, a fresh process.
if (args.child) {
  const { lib: name, urls, mode, keys } = JSON.parse(args.child);
  const lib = await createLib(name, urls);
  // Marks on the clock of --cpu-prof profiles (µs), for top.mjs --from/--to.
  const mark = (phase) => process.stdout.write(`@@phase ${phase} ${process.hrtime.bigint() / 1000n}\n`);
  mark('first');
  const first = await block(lib, mode, keys, 200);
  mark('next');
  const next = await block(lib, mode, keys, config.pairs);
  mark('end');
  await lib.close();
  process.stdout.write('@@result ' + JSON.stringify({ first, next }) + '\n');
  process.exit(0);
}

const { startServers } = await import('../../scripts/redis-nodes.mjs');
const servers = await startServers(Math.max(...config.nodes));
const admin = servers.map((s) => new Redis(s.url));
if (args.pin) pinApart(servers);
const urlsFor = (nodes) => servers.slice(0, nodes).map((s) => s.url);
const cells = config.nodes.flatMap((nodes) => config.modes.flatMap((mode) => config.keys.map((keys) => ({ nodes, mode, keys }))));
const results = {}; // results[cell][lib] = [{ cpu, alloc, scav, rate }] or cold { first, next }
const cellName = (c) => `${c.nodes}n ${c.mode} ${c.keys}`;

function coldChild(name, cell) {
  const child = JSON.stringify({ lib: name, urls: urlsFor(cell.nodes), mode: cell.mode, keys: cell.keys });
  const flags = args['child-flags'] ? String(args['child-flags']).split(' ') : [];
  const argv = [...process.execArgv, ...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2).filter((a) => !a.startsWith('--cold')), `--child=${child}`];
  return new Promise((resolvePromise, reject) => {
    const p = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      const lines = out.trim().split('\n');
      const result = lines.find((l) => l.startsWith('@@result '));
      if (args['child-log']) appendFileSync(String(args['child-log']), `## ${name} ${cellName(cell)}\n${lines.filter((l) => l !== result).join('\n')}\n`);
      // With --trace-opt: TurboFan's compile time (ms, all phases) during the measured pairs.
      let phase = '';
      const jit = { first: 0, next: 0 };
      for (const l of lines) {
        if (l.startsWith('@@phase ')) phase = l.split(' ')[1];
        const m = l.match(/completed compiling .* took ([\d.]+), ([\d.]+), ([\d.]+) ms/);
        if (m && phase in jit) jit[phase] += Number(m[1]) + Number(m[2]) + Number(m[3]);
      }
      if (code === 0 && result) resolvePromise({ ...JSON.parse(result.slice(9)), jit });
      else reject(new Error(`cold child ${name} exited ${code}`));
    });
  });
}

const libs = {};
try {
  if (!args.cold) {
    for (const nodes of config.nodes) {
      for (const name of config.libs) {
        const lib = (libs[`${nodes}|${name}`] = await createLib(name, urlsFor(nodes)));
        for (const mode of config.modes) await block(lib, mode, 'distinct', 2000); // warm up
      }
    }
  }
  for (let round = 0; round < config.rounds; round++) {
    for (const cell of cells) {
      const order = config.libs.map((_, i) => config.libs[(i + round) % config.libs.length]);
      for (const name of order) {
        await Promise.all(admin.map((c) => c.flushall()));
        const r = args.cold ? await coldChild(name, cell) : await block(libs[`${cell.nodes}|${name}`], cell.mode, cell.keys, config.pairs);
        ((results[cellName(cell)] ??= {})[name] ??= []).push(r);
      }
      const show = (r) => (args.cold ? `${r.first.cpu.toFixed(0)}/${r.next.cpu.toFixed(0)}` : r.cpu.toFixed(1));
      console.error(`round ${round + 1} ${cellName(cell)}: ${order.map((l) => `${l} ${show(results[cellName(cell)][l].at(-1))}`).join(', ')}`);
    }
  }
} finally {
  await Promise.all(Object.values(libs).map((l) => l.close()));
  await Promise.all(admin.map((c) => c.quit()));
  await Promise.all(servers.map((s) => s.stop()));
}

const f = (v, d = 1) => (v === undefined ? '' : v.toFixed(d));
console.log(
  `\n${args.cold ? 'cold (fresh process: first 200 pairs | next ' + config.pairs + ')' : 'warm (one process)'}${args.pin ? ', pinned' : ''}; ttl ${config.ttl}, waitTimeout ${config.wait}; medians of ${config.rounds} rounds; ${args.cold ? 'CPU µs/pair first | next, alloc B/pair next' : 'CPU µs/pair, alloc B/pair, scavenges/1000 pairs, pairs/s'}`,
);
console.log(`| cell | ${config.libs.join(' | ')} |`);
console.log(`|---|${config.libs.map(() => '---:|').join('')}`);
for (const [cell, rows] of Object.entries(results)) {
  const cols = config.libs.map((l) => {
    const r = rows[l];
    const jit = String(args['child-flags'] ?? '').includes('--trace-opt') ? `, JIT ${f(median(r.map((x) => x.jit.first)), 0)} \\| ${f(median(r.map((x) => x.jit.next)), 0)} ms` : '';
    if (args.cold) return `${f(median(r.map((x) => x.first.cpu)), 0)} \\| ${f(median(r.map((x) => x.next.cpu)))} µs, ${f(median(r.map((x) => x.next.alloc)), 0)} B${jit}`;
    return `${f(median(r.map((x) => x.cpu)))} µs, ${f(median(r.map((x) => x.alloc)), 0)} B, ${f(median(r.map((x) => x.scav)), 2)} sc, ${f(median(r.map((x) => x.rate)), 0)}/s`;
  });
  console.log(`| ${cell} | ${cols.join(' | ')} |`);
}
