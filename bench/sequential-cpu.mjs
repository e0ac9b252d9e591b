// Where scenario 1's time goes on a machine the Redis nodes share with the
// client: CPU per sequential lock+unlock pair, the client's (user and
// system, process.cpuUsage) and the nodes' (utime + stime of every
// redis-server, from /proc), for this library, node-redlock and the raw
// floor, in blocks of PAIRS pairs rotating in one process on the same local
// nodes (so machine noise hits all alike). Medians over blocks. The nodes'
// figure moves in clock ticks (10 ms per block of 1,000 pairs = 10 µs per
// pair), so read it over many blocks. "busy" is the machine's share in use
// while the library ran: (client + nodes CPU) / (wall × cores); near 100 %,
// a library can only go faster by spending less CPU per pair, on either side.
// A library that is never busy is not waiting on CPU: latency bounds it.
// Run after `npm run build`:  node bench/sequential-cpu.mjs [blocks] [nodes]
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { startServers } from '../scripts/redis-nodes.mjs';
import { createLib, FLOOR, OURS } from './libs.mjs';
import { median } from './util.mjs';

const BLOCKS = Number(process.argv[2] ?? 20);
const NODES = Number(process.argv[3] ?? 5);
const PAIRS = 1000;
const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

/** CPU time (µs) the redis-server processes used so far. */
function serversCpu(servers) {
  let ticks = 0;
  for (const server of servers) {
    // Fields after the command name, which may hold spaces: utime, stime are 14th and 15th.
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * TICK_US;
}

const servers = await startServers(NODES);
try {
  const urls = servers.map((s) => s.url);
  const names = [OURS, 'redlock', FLOOR];
  const libs = {};
  for (const name of names) libs[name] = await createLib(name, urls, { ttl: 10_000, wait: 0 });
  // Warm up (scripts loaded, code optimised) before measuring.
  for (const name of names) for (let i = 0; i < 500; i++) await libs[name].release(await libs[name].acquire(`warm:${name}:${i}`));
  const results = Object.fromEntries(names.map((n) => [n, { wall: [], user: [], system: [], servers: [], busy: [] }]));
  let k = 0;
  for (let b = 0; b < BLOCKS; b++) {
    for (const name of names.map((_, i) => names[(i + b) % names.length])) {
      const lib = libs[name];
      const servers0 = serversCpu(servers);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < PAIRS; i++) await lib.release(await lib.acquire(`cpu:${k++}`));
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const r = results[name];
      const nodesCpu = serversCpu(servers) - servers0;
      r.wall.push((wall * 1000) / PAIRS);
      r.user.push(cpu.user / PAIRS);
      r.system.push(cpu.system / PAIRS);
      r.servers.push(nodesCpu / PAIRS);
      r.busy.push((100 * (cpu.user + cpu.system + nodesCpu)) / (wall * 1000 * cpus().length));
    }
  }
  console.log(`${NODES} node(s), ${BLOCKS} blocks of ${PAIRS} pairs; µs per pair, medians`);
  console.log(`library                 wall  client user  client system  nodes  busy % of ${cpus().length} cores`);
  for (const name of names) {
    const r = results[name];
    const cell = (values, width) => median(values).toFixed(1).padStart(width);
    console.log(`${name.padEnd(20)} ${cell(r.wall, 7)} ${cell(r.user, 12)} ${cell(r.system, 14)} ${cell(r.servers, 6)} ${cell(r.busy, 7)}`);
  }
  for (const name of names) await libs[name].close();
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
