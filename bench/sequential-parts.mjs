// Scenario 1 on 5 nodes taken apart: sequential lock+unlock pairs through
// ever more of this library, in blocks of 250 pairs rotating with
// node-redlock's in one process on the same 5 local nodes (so machine
// noise hits all alike), each reported as its speed relative to
// node-redlock (median over blocks):
//   bare      our acquire and release scripts, EVALSHA on every node, resolved at a quorum
//   poll      the same through poll() (per-request node timeout, ballots)
//   node      the same through RedlockNode.run (write batching, NOSCRIPT fallback)
//   library   Redlock.acquire / lock.release
// Run after `npm run build`:  node bench/sequential-parts.mjs [blocks]
import { randomBytes } from 'node:crypto';
import { Redlock } from '../dist/esm/index.js';
import { poll } from '../dist/esm/core/nodes/poll.js';
import {
  ACQUIRE_SCRIPT,
  RELEASE_SCRIPT,
  acquireArgs as scriptAcquireArgs,
  declareMetaKeys,
  releaseArgs as scriptReleaseArgs,
} from '../dist/esm/core/scripts/index.js';
import { startServers } from '../scripts/redis-nodes.mjs';
import { createLib } from './libs.mjs';
import { median } from './util.mjs';

const BLOCKS = Number(process.argv[2] ?? 40);
const PAIRS = 250;
const servers = await startServers(5);
try {
  const urls = servers.map((s) => s.url);
  const redlock = new Redlock({ clients: urls, ttl: 10_000, waitTimeout: 0 });
  await Promise.all(redlock.nodes.map((n) => n.client.ping()));
  const quorum = redlock.quorum;
  // The arguments the library sends for a single uncontended attempt and release.
  const acquireArgs = (value) => scriptAcquireArgs(value, 10_000, redlock.metaPrefix, false, undefined);
  const releaseArgs = (value) => scriptReleaseArgs(value, redlock.metaPrefix, undefined, true, undefined);
  const value = () => randomBytes(16).toString('base64url');
  const atQuorum = (requests) =>
    new Promise((resolve, reject) => {
      let answered = 0;
      // An error is a broken bench (nothing fails here otherwise): said, not waited out.
      for (const r of requests) r.then(() => ++answered === quorum && resolve(), reject);
    });
  // By hand, as RedlockNode.run sends a script: the meta keys it may touch
  // declared (declareMetaKeys, once per request: the nodes share its arrays).
  const evalsha = (node, script, keys, args) => {
    const call = declareMetaKeys(script, keys, args);
    return node.client.evalsha(script.sha, call.keys.length, ...call.keys, ...call.args);
  };
  const viaPoll = (send) =>
    poll(redlock.nodes, send, (reply) => (Number(reply) >= 1 ? 'granted' : 'busy'), 100, (t) => t.granted >= quorum);
  // One request: `send(script, keys, args)` to every node, the arrays made once.
  const variant = (send) => ({
    acquire: async (resource) => {
      const lock = { key: redlock.keyPrefix + resource, value: value() };
      await send(ACQUIRE_SCRIPT, [lock.key], acquireArgs(lock.value));
      return lock;
    },
    release: (lock) => send(RELEASE_SCRIPT, [lock.key], releaseArgs(lock.value)),
  });
  const libs = {
    bare: variant((script, keys, args) => atQuorum(redlock.nodes.map((node) => evalsha(node, script, keys, args)))),
    poll: variant((script, keys, args) => viaPoll((node) => evalsha(node, script, keys, args))),
    node: variant((script, keys, args) => viaPoll((node) => node.run(script, keys, args))),
    library: { acquire: (resource) => redlock.acquire(resource), release: (lock) => lock.release() },
    redlock: await createLib('redlock', urls, { ttl: 10_000, wait: 0 }),
  };
  // Load the scripts on every node (the library sends them on NOSCRIPT).
  await (await redlock.acquire('warm')).release();
  const names = Object.keys(libs);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  let k = 0;
  for (let b = 0; b < BLOCKS + 2; b++) {
    const order = names.map((_, i) => names[(i + b) % names.length]);
    for (const name of order) {
      const lib = libs[name];
      const t0 = performance.now();
      for (let i = 0; i < PAIRS; i++) await lib.release(await lib.acquire(`parts:${k++}`));
      if (b >= 2) times[name].push(performance.now() - t0);
    }
  }
  for (const name of names) {
    const speed = median(times.redlock.map((t, i) => t / times[name][i]));
    console.log(`${name.padEnd(8)} ${((median(times[name]) * 1000) / PAIRS).toFixed(1)} µs per pair, speed vs node-redlock ${speed.toFixed(3)}`);
  }
  await redlock.quit();
  await libs.redlock.close();
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
