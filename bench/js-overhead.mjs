// What a library adds to a lock+unlock pair in JavaScript, without any I/O:
// this library and node-redlock on 5 ioredis clients whose `sendCommand`
// answers at once (a resolved promise with the reply of a granted acquire
// or a done release), sequential pairs in rotating blocks, median µs per
// pair. Scenario 1 spends about 240 µs per pair on 5 local nodes; this is
// the library's own share of it (ioredis's command encoding and parsing,
// the system calls and the nodes are left out, and are the same for both).
// Run after `npm run build`:  node bench/js-overhead.mjs [blocks]
import { Redis } from 'ioredis';
import NodeRedlock from 'redlock';
import { Redlock } from '../dist/esm/index.js';
import { ACQUIRE_SCRIPT } from '../dist/esm/core/scripts/index.js';
import { median } from './util.mjs';

const BLOCKS = Number(process.argv[2] ?? 20);
const PAIRS = 20_000;

/** Five clients that never connect, whose sendCommand answers `reply(sha)` at once. */
const answeringAtOnce = (reply) =>
  Array.from({ length: 5 }, (_, i) => {
    const client = new Redis({ port: 1 + i, lazyConnect: true });
    client.sendCommand = (command) => Promise.resolve(reply(command.args[0]));
    return client;
  });

// Ours: the acquire script answers 1 when granted, the release script 2 (one key deleted).
const ours = new Redlock({ clients: answeringAtOnce((sha) => (sha === ACQUIRE_SCRIPT.sha ? 1 : 2)), ttl: 10_000, waitTimeout: 0 });
// node-redlock's scripts answer the number of keys set or deleted.
const theirs = new NodeRedlock(answeringAtOnce(() => 1), { retryCount: 0 });
const libs = {
  'nestjs-redlock': async (key) => (await ours.acquire(key)).release(),
  redlock: async (key) => (await theirs.acquire([key], 10_000)).release(),
};
const times = Object.fromEntries(Object.keys(libs).map((name) => [name, []]));
let k = 0;
for (let b = 0; b < BLOCKS + 2; b++) {
  const names = Object.keys(libs);
  for (const name of names.map((_, i) => names[(i + b) % names.length])) {
    const t0 = performance.now();
    for (let i = 0; i < PAIRS; i++) await libs[name](`k${k++}`);
    // The first two blocks warm the code up.
    if (b >= 2) times[name].push(((performance.now() - t0) * 1000) / PAIRS);
  }
}
for (const [name, list] of Object.entries(times)) console.log(`${name.padEnd(16)} ${median(list).toFixed(2)} µs per pair`);
await ours.quit();
