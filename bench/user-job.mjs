// One library in a process of its own, driven by bench/user-path.mjs over
// IPC: `setup` creates the library (for `LockService`, a Nest application
// context around RedlockModule.forRoot), `run` runs one measured job,
// `exit` closes it. A cold job is a fresh process that runs one job; a warm
// one is a long-lived process that has run earlier jobs.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import * as ours from '../dist/esm/index.js';
import { resolve } from 'node:path';
import { createLib, SERVICE, SERVICE_BASELINE } from './libs.mjs';
import { cpuSince } from './util.mjs';

/** LockService as an application calls it: per-call options, in a Nest application context. */
async function createService(urls, { ttl, wait }, lib = ours) {
  const app = await NestFactory.createApplicationContext(lib.RedlockModule.forRoot({ clients: urls }), {
    logger: false,
  });
  const locks = app.get(lib.LockService);
  const options = { ttl, waitTimeout: wait };
  return {
    acquire: (key) => locks.acquire(key, options),
    release: (lock) => lock.release(),
    close: () => app.close(),
  };
}

let lib;

/**
 * `pairs` lock+unlock pairs after `warm` unmeasured ones, by one loop
 * (`seq`) or 64 concurrent ones (`par`), each on a new key or each loop
 * on its own key again and again (`same`).
 */
async function run({ scenario, keys, warm, pairs, tag }) {
  const workers = scenario === 'par' ? 64 : 1;
  const loop = async (w, count, phase) => {
    for (let i = 0; i < count; i++) {
      const key = keys === 'same' ? `u:${tag}:${w}` : `u:${tag}:${phase}:${w}:${i}`;
      await lib.release(await lib.acquire(key));
    }
  };
  const all = (count, phase) =>
    Promise.all(Array.from({ length: workers }, (_, w) => loop(w, Math.ceil(count / workers), phase)));
  await all(warm, 'w');
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  await all(pairs, 'm');
  const elapsed = performance.now() - start;
  const done = Math.ceil(pairs / workers) * workers;
  const total = done + Math.ceil(warm / workers) * workers;
  return { pairsPerSec: (done / elapsed) * 1000, cpuUsPerPair: cpuSince(cpu0) / done, total };
}

process.on('message', async (msg) => {
  try {
    if (msg.cmd === 'setup') {
      lib =
        msg.lib === SERVICE
          ? await createService(msg.urls, msg.opts)
          : msg.lib === SERVICE_BASELINE
            ? await createService(msg.urls, msg.opts, await import(resolve(process.env.BENCH_BASELINE, 'dist/esm/index.js')))
            : await createLib(msg.lib, msg.urls, msg.opts);
      process.send({ ok: true });
    } else if (msg.cmd === 'run') {
      process.send({ ok: true, result: await run(msg) });
    } else if (msg.cmd === 'exit') {
      await lib?.close();
      process.exit(0);
    }
  } catch (error) {
    process.send({ error: String(error?.stack ?? error) });
  }
});
process.send({ ready: true });
