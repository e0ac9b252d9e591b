// What an idle spell costs a long-lived process: blocks of 64 concurrent
// loops on distinct keys (4,032 uncontended lock+unlock pairs each), every
// other block after a long idle spell, one library per run, the process on
// core 0 and its Redis on core 1 (2+ cores). After some seconds of idling,
// V8 shrinks the heap (memory reducer) and may flush the bytecode of
// functions that have not run, and the next pairs run cold again; how much
// that costs depends on how much code the library runs per pair.
// Usage: node bench/profile/idle.mjs [--lib=nestjs-redlock] [--cycles=5]
//   [--idle=20000 (ms)] [node flags go before the script, e.g.
//   --no-memory-reducer --no-flush-bytecode, to see what each accounts for]
import { startServers } from '../../scripts/redis-nodes.mjs';
import { createLib } from '../libs.mjs';
import { median, parseFlags, pinApart, sleep } from '../util.mjs';

const args = parseFlags();
const name = String(args.lib ?? 'nestjs-redlock');
const cycles = Number(args.cycles ?? 5);
const idle = Number(args.idle ?? 20_000);
const [server] = await startServers(1);
pinApart([server]);
const lib = await createLib(name, [server.url], { ttl: 10_000, wait: 0 });

let tag = 0;
async function block() {
  const t = tag++;
  const loop = async (w) => {
    for (let i = 0; i < 63; i++) await lib.release(await lib.acquire(`idle:${t}:${w}:${i}`));
  };
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: 64 }, (_, w) => loop(w)));
  const wall = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  return { rate: (4032 / wall) * 1000, cpu: (cpu.user + cpu.system) / 4032 };
}

try {
  for (let i = 0; i < 4; i++) await block(); // compiled and connected
  const after = { short: [], long: [] };
  for (let c = 0; c < cycles; c++) {
    await sleep(300);
    after.short.push(await block());
    await sleep(idle);
    after.long.push(await block());
  }
  const f = (list, k) => median(list.map((r) => r[k])).toFixed(k === 'rate' ? 0 : 1);
  console.log(
    `${name}: after 0.3 s idle ${f(after.short, 'rate')} pairs/s, ${f(after.short, 'cpu')} µs/pair; ` +
      `after ${idle / 1000} s idle ${f(after.long, 'rate')} pairs/s, ${f(after.long, 'cpu')} µs/pair ` +
      `(medians of ${cycles}${process.execArgv.length ? `, node ${process.execArgv.join(' ')}` : ''})`,
  );
} finally {
  await lib.close();
  await server.stop();
}
