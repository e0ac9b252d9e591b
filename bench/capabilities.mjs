// Server capabilities (issue 40): where a node offers a conditional write,
// does it beat the library's scripts for a single-key lock?
//   extend   (A) EXTEND_SCRIPT by EVALSHA through the library's own sender
//            (`runScript`, dist/esm), against
//            (B) `SET key value IFEQ value PX ttl` (Valkey 8.1+, Redis 8.4+),
//            sent the same lean way (one ioredis Command, no wrapper).
//   release  (A) RELEASE_SCRIPT with its meta keys declared (`declareMetaKeys`,
//            as RedlockNode sends it), against (B) `DELIFEQ key value`
//            (Valkey 9.0+) or `DELEX key IFEQ value` (Redis 8.4+): each op a
//            `SET key value PX ttl` then the release, as the SET is the same
//            for both. Measured only on a server that offers one of them.
// Each server is probed first (COMMAND INFO, COMMAND DOCS SET, the replies of
// IFEQ on match, mismatch and a missing key); only what it offers is measured.
// Cells: seq (one client, each op awaited) and par (64 loops in flight on the
// same connection, pipelined). Per block: ops/s, client CPU µs per op
// (process.cpuUsage), server CPU µs per op (INFO cpu, user + sys, whole
// process) and the node's own time per call (INFO commandstats usec_per_call
// of EVALSHA / SET / DELIFEQ, reset before each block; a script's inner calls
// are inside its EVALSHA figure). Rounds interleave A and B (ABAB, then BABA:
// the order alternates), client on core 0, server on core 1.
// Table: medians over rounds, the spread of each side (min–max over rounds)
// and B/A per round (median, min–max).
// Caveat for any adoption: the library's extend sends one call for all the
// keys of a lock (all or nothing on each node); SET IFEQ covers a single-key
// lock only. Fencing does not change extend (the counters are read at
// acquire and raised by FENCE_SCRIPT; extend sends only the lock keys). The
// release script also serves the wait queues (it looks for a queue, hands the
// key to the next waiter, deletes the grant note `g:`): DELIFEQ / DELEX could
// only stand in for its uncontended path, and only if the client knew there
// was no queue, which it cannot.
// Run after `npm run build` (needs no other benchmark running):
//   node bench/capabilities.mjs [--servers=valkey-8.1,redis-8.0] [--rounds=6]
//     [--seconds=2.5] [--ttl=10000]
//   (--servers takes names of scripts/ensure-servers.mjs or server binaries)
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, Redis } from 'ioredis';
import { ensureServer } from '../scripts/ensure-servers.mjs';
import { SERVERS_DIE_WITH_PARENT, freePort } from '../scripts/redis-nodes.mjs';
import {
  EXTEND_SCRIPT,
  RELEASE_SCRIPT,
  declareMetaKeys,
  releaseArgs,
  runScript,
} from '../dist/esm/core/scripts/index.js';
import { median, parseFlags, pinApart } from './util.mjs';

const flags = parseFlags();
const config = {
  servers: String(flags.servers ?? 'valkey-8.1,redis-8.0').split(','),
  rounds: Math.max(5, Number(flags.rounds ?? 6)),
  seconds: Number(flags.seconds ?? 2.5),
  ttl: Number(flags.ttl ?? 10_000),
};
const IN_FLIGHT = 64;
const META = 'redlock:'; // the library's default meta prefix

/** A server process of `binary` on a free port, persistence off. */
async function startServer(binary) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'redlock-caps-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'];
  const command = SERVERS_DIE_WITH_PARENT ? ['setpriv', '--pdeathsig', 'KILL', binary, ...args] : [binary, ...args];
  const child = spawn(command[0], command.slice(1), { stdio: 'ignore' });
  const server = {
    pid: child.pid,
    port,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (const deadline = Date.now() + 10_000; ; ) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      await probe.quit();
      return server;
    } catch (error) {
      probe.disconnect();
      if (Date.now() > deadline) {
        await server.stop();
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A command sent as runScript sends its EVALSHA: one Command, replies as strings. */
const send = (client, name, args) => client.sendCommand(new Command(name, args, { replyEncoding: 'utf8' }));

/** What the server offers, with the replies that an adoption would read. */
async function probe(admin) {
  const info = await admin.info('server');
  const version = /valkey_version:(\S+)/.exec(info)?.[1] ? `Valkey ${/valkey_version:(\S+)/.exec(info)[1]}` : `Redis ${/redis_version:(\S+)/.exec(info)[1]}`;
  const has = async (name) => ((await admin.call('COMMAND', 'INFO', name))?.[0] ?? null) !== null;
  const setDocs = JSON.stringify(await admin.call('COMMAND', 'DOCS', 'SET'));
  const caps = { version, setIfeq: /IFEQ/i.test(setDocs), delifeq: await has('DELIFEQ'), delex: await has('DELEX') };
  const reply = async (...args) => {
    try {
      return JSON.stringify(await send(admin, args[0], args.slice(1)));
    } catch (error) {
      return `error "${error.message.split('\n')[0]}"`;
    }
  };
  await admin.set('caps:k', 'v', 'PX', 10_000);
  caps.replies = {
    'SET k v IFEQ v PX 10000 (match)': await reply('set', 'caps:k', 'v', 'IFEQ', 'v', 'PX', 10_000),
    'SET k v IFEQ w PX 10000 (mismatch)': await reply('set', 'caps:k', 'v', 'IFEQ', 'w', 'PX', 10_000),
    'SET missing v IFEQ v PX 1000 (no key)': await reply('set', 'caps:missing', 'v', 'IFEQ', 'v', 'PX', 1000),
    'EXISTS missing (after it)': await reply('exists', 'caps:missing'),
    'DELIFEQ k w (mismatch)': await reply('delifeq', 'caps:k', 'w'),
    'DELEX k IFEQ w (mismatch)': await reply('delex', 'caps:k', 'IFEQ', 'w'),
  };
  await admin.del('caps:k', 'caps:missing');
  return caps;
}

const cpuOf = (info) => Number(/used_cpu_sys:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)[1]);
const usecPerCall = (info, command) => Number(new RegExp(`cmdstat_${command}:calls=\\d+,usec=\\d+,usec_per_call=([\\d.]+)`).exec(info)?.[1]);

/**
 * One block: `op` run for `seconds` by `loops` loops on one client.
 * Returns ops/s, client and server CPU µs per op, and the node's µs per
 * call of `command` (commandstats).
 */
async function block(admin, op, loops, command) {
  await admin.config('RESETSTAT');
  const server0 = cpuOf(await admin.info('cpu'));
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const until = start + config.seconds * 1000;
  let ops = 0;
  const loop = async () => {
    // Checked every 16 ops: the clock is read far less often than ops run.
    while (performance.now() < until) for (let i = 0; i < 16; i++, ops++) await op();
  };
  await Promise.all(Array.from({ length: loops }, loop));
  const wall = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  const server = (cpuOf(await admin.info('cpu')) - server0) * 1e6;
  const stats = await admin.info('commandstats');
  return { rate: (ops / wall) * 1000, client: (cpu.user + cpu.system) / ops, server: server / ops, node: usecPerCall(stats, command) };
}

/** The variants of one comparison on `client`, each with the command whose commandstats it reads. */
function extendVariants(client) {
  const key = 'redlock:caps:extend';
  const value = 'caps-extend-value-0123456789abcdef';
  const keys = [key];
  const args = [value, config.ttl];
  const setArgs = [key, value, 'IFEQ', value, 'PX', config.ttl];
  return {
    prepare: (admin) => admin.set(key, value, 'PX', config.ttl),
    A: {
      label: 'EXTEND_SCRIPT (EVALSHA)',
      command: 'evalsha',
      op: async () => {
        if ((await runScript(client, EXTEND_SCRIPT, keys, args)) !== 1) throw new Error('extend script did not extend');
      },
    },
    B: {
      label: 'SET IFEQ PX',
      command: 'set',
      op: async () => {
        if ((await send(client, 'set', setArgs)) !== 'OK') throw new Error('SET IFEQ did not extend');
      },
    },
  };
}

function releaseVariants(client, caps) {
  let n = 0;
  const lock = () => {
    const key = `redlock:caps:release:${n++ % 100_000}`;
    return { key, value: `caps-release-${n}` };
  };
  const setUp = (l) => send(client, 'set', [l.key, l.value, 'PX', config.ttl]);
  const releaseB = caps.delifeq ? (l) => send(client, 'delifeq', [l.key, l.value]) : (l) => send(client, 'delex', [l.key, 'IFEQ', l.value]);
  return {
    prepare: () => undefined,
    A: {
      label: 'SET PX + RELEASE_SCRIPT',
      command: 'evalsha',
      op: async () => {
        const l = lock();
        await setUp(l);
        // As RedlockNode.run sends it: the meta keys declared.
        const call = declareMetaKeys(RELEASE_SCRIPT, [l.key], releaseArgs(l.value, META, undefined, true, undefined));
        if (Number(await runScript(client, RELEASE_SCRIPT, call.keys, call.args)) < 2) throw new Error('release script did not delete');
      },
    },
    B: {
      label: `SET PX + ${caps.delifeq ? 'DELIFEQ' : 'DELEX IFEQ'}`,
      command: caps.delifeq ? 'delifeq' : 'delex',
      op: async () => {
        const l = lock();
        await setUp(l);
        if (Number(await releaseB(l)) !== 1) throw new Error('conditional delete did not delete');
      },
    },
  };
}

/** ABAB rounds of both cells; returns rows for the table. */
async function compare(admin, variants) {
  const cells = { seq: 1, par: IN_FLIGHT };
  const results = {};
  await variants.prepare(admin);
  // Warm: loads the script (NOSCRIPT, then EVAL), lets V8 compile both paths.
  for (const side of ['A', 'B']) for (let i = 0; i < 3000; i++) await variants[side].op();
  for (let round = 0; round < config.rounds; round++) {
    const order = round % 2 ? ['B', 'A'] : ['A', 'B'];
    for (const [cell, loops] of Object.entries(cells))
      for (const side of order) {
        await variants.prepare(admin);
        const r = await block(admin, variants[side].op, loops, variants[side].command);
        ((results[cell] ??= { A: [], B: [] })[side] ??= []).push(r);
      }
    process.stderr.write(`  round ${round + 1}/${config.rounds}: ${Object.entries(results).map(([cell, r]) => `${cell} A ${r.A.at(-1).rate.toFixed(0)}/s B ${r.B.at(-1).rate.toFixed(0)}/s`).join(', ')}\n`);
  }
  return results;
}

const METRICS = [
  ['rate', 'ops/s', 0],
  ['latency', 'µs/op (wall, 1/rate)', 1],
  ['client', 'client CPU µs/op', 2],
  ['server', 'server CPU µs/op (INFO cpu)', 2],
  ['node', 'node µs/call (commandstats)', 2],
];

function rows(serverName, what, variants, results) {
  const out = [];
  for (const [cell, sides] of Object.entries(results)) {
    for (const [metric, label, digits] of METRICS) {
      if (metric === 'latency' && cell !== 'seq') continue;
      const get = (r) => (metric === 'latency' ? 1e6 / r.rate : r[metric]);
      const a = sides.A.map(get);
      const b = sides.B.map(get);
      const spread = (list) => {
        const m = median(list);
        return `${m.toFixed(digits)} (${Math.min(...list).toFixed(digits)}–${Math.max(...list).toFixed(digits)}, ±${((50 * (Math.max(...list) - Math.min(...list))) / m).toFixed(1)}%)`;
      };
      const ratios = b.map((v, i) => v / a[i]);
      out.push(
        `| ${serverName} | ${what} | ${cell} | ${label} | ${spread(a)} | ${spread(b)} | ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}) |`,
      );
    }
  }
  return out;
}

const table = [];
const notes = [];
for (const name of config.servers) {
  const binary = name.includes('/') ? name : ensureServer(name, () => undefined);
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const server = await startServer(binary);
  const client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
  const admin = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
  try {
    pinApart([server]);
    const caps = await probe(admin);
    console.log(`\n## ${name}: ${caps.version} (${version})`);
    console.log(`SET ... IFEQ: ${caps.setIfeq ? 'yes' : 'no'}; DELIFEQ: ${caps.delifeq ? 'yes' : 'no'}; DELEX: ${caps.delex ? 'yes' : 'no'}`);
    for (const [call, reply] of Object.entries(caps.replies)) console.log(`  ${call.padEnd(40)} -> ${reply}`);
    const both = async (what, variants) => {
      console.error(`${name} ${what}: ${variants.A.label} (A) vs ${variants.B.label} (B), ${config.rounds} rounds of ${config.seconds} s per block`);
      table.push(...rows(name, `${what}: ${variants.B.label} / ${variants.A.label}`, variants, await compare(admin, variants)));
    };
    if (caps.setIfeq) await both('extend', extendVariants(client));
    else notes.push(`${name} (${caps.version}): no SET IFEQ, extend not compared`);
    if (caps.delifeq || caps.delex) await both('release', releaseVariants(client, caps));
    else notes.push(`${name} (${caps.version}): neither DELIFEQ nor DELEX, release not compared`);
  } finally {
    client.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

console.log(`\nSingle-key lock, ttl ${config.ttl} ms; medians over ${config.rounds} interleaved rounds of ${config.seconds} s per block (min–max over rounds, ±half-range in % of the median); B/A per round: median (min–max). seq: 1 op in flight; par: ${IN_FLIGHT} in flight on one connection. Client on core 0, server on core 1.`);
if (table.length) {
  console.log('| server | comparison | cell | metric | A | B | B/A |');
  console.log('|---|---|---|---|---:|---:|---:|');
  for (const row of table) console.log(row);
}
for (const note of notes) console.log(`- ${note}`);
