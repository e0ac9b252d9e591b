// What this library's acquire and release scripts cost a sequential
// lock+unlock pair on one node, against the plain `SET key value PX ttl NX`
// and compare-and-delete script that redis-semaphore (and the bench's raw
// floor) use: the same client (ioredis, one connection, no library code),
// keys and values, so the difference is the commands alone. Client on core 0,
// Redis on core 1 (2+ cores); blocks interleaved in rotating order; medians.
// Our acquire must be a script: it keeps newcomers behind queued waiters
// (the barging window) and reads fencing counters, which SET NX cannot.
// Run after `npm run build`: node bench/profile/script-cost.mjs [--rounds=7]
//   [--pairs=10000]
import { Redis } from 'ioredis';
import { startServers } from '../../scripts/redis-nodes.mjs';
import { median, parseFlags, pinApart } from '../util.mjs';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT, acquireArgs, declareMetaKeys, releaseArgs } from '../../dist/esm/core/scripts/index.js';

const args = parseFlags();
const rounds = Number(args.rounds ?? 7);
const pairs = Number(args.pairs ?? 10_000);
const [server] = await startServers(1);
pinApart([server]);
const client = new Redis(server.url);
const admin = new Redis(server.url);
client.defineCommand('cad', {
  numberOfKeys: 1,
  lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
});
await client.script('LOAD', ACQUIRE_SCRIPT.source);
await client.script('LOAD', RELEASE_SCRIPT.source);

// The calls as the library sends them for a single uncontended attempt and
// release: the meta keys they may touch declared (`declareMetaKeys`).
const evalsha = (script, key, args) => {
  const call = declareMetaKeys(script, [key], args);
  return client.evalsha(script.sha, call.keys.length, ...call.keys, ...call.args);
};
let n = 0;
const ways = {
  'acquire + release scripts (ours)': async () => {
    const key = `redlock:c${n++}`;
    const value = `v${n}`;
    if ((await evalsha(ACQUIRE_SCRIPT, key, acquireArgs(value, 10_000, 'redlock:', false, undefined))) !== 1) throw new Error('acquire script refused');
    if ((await evalsha(RELEASE_SCRIPT, key, releaseArgs(value, 'redlock:', undefined, true, undefined))) !== 2) throw new Error('release script did not delete');
  },
  'SET NX PX + compare-and-delete': async () => {
    const key = `redlock:c${n++}`;
    const value = `v${n}`;
    await client.set(key, value, 'PX', 10_000, 'NX');
    await client.cad(key, value);
  },
};
const serverCpu = async () => {
  const info = await admin.info('cpu');
  return Number(/used_cpu_sys:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)[1]);
};

const results = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
try {
  for (let round = 0; round < rounds; round++) {
    const order = Object.entries(ways);
    if (round % 2) order.reverse();
    for (const [name, pair] of order) {
      for (let i = 0; i < 1000; i++) await pair(); // warm
      const server0 = await serverCpu();
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < pairs; i++) await pair();
      const wall = performance.now() - start;
      const cpu = process.cpuUsage(cpu0);
      results[name].push({
        rate: (pairs / wall) * 1000,
        client: (cpu.user + cpu.system) / pairs,
        server: (((await serverCpu()) - server0) * 1e6) / pairs,
      });
    }
  }
  const f = (list, k, digits) => median(list.map((r) => r[k])).toFixed(digits);
  console.log(`1 node, sequential, medians of ${rounds} rounds of ${pairs} pairs: pairs/s, client and server CPU µs per pair`);
  for (const [name, list] of Object.entries(results))
    console.log(`${name.padEnd(34)} ${f(list, 'rate', 0).padStart(6)}/s  client ${f(list, 'client', 1)} µs  server ${f(list, 'server', 1)} µs`);
} finally {
  client.disconnect();
  admin.disconnect();
  await server.stop();
}
