// One client process of the fault harness (forked by harness.mjs): several
// concurrent workers lock hot resources through the library's Redlock and,
// inside the lock, read-modify-write a register. The register is the
// checker's (over IPC) or, for fenced scenarios, a FencedStore on a Redis of
// its own. Every event goes to the checker as it happens (a client killed
// with -9 loses nothing it already reported), stamped with this process's
// clock, performance.timeOrigin + performance.now(); the checker corrects
// it (see harness.mjs, clock offsets).
//
// Workloads (cfg.workload): 'mutex' (the default) as above; 'semaphore':
// `acquire(resource, { permits })`, the register being the permit slot the
// lock holds (`lock.resources[0]`, itself a mutex), or none for a semaphore
// without slots (cfg.semaphore: 'per-node', 'redis-semaphore', see
// semaphores.mjs); 'rw': `acquire(resource, { mode })`, a writer (cfg.pWrite
// of the operations) read-modify-writes the resource's register, a reader
// reads it before and after its work and reports a change (a writer came
// in between).
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';

const cfg = JSON.parse(process.env.FAULTS_CLIENT);
const lib = await import(cfg.dist + '/core/index.js');
const { Redlock, FencedStore, JitteredRetry } = lib;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const rand = (a, b) => a + Math.random() * (b - a);
const send = (m) => process.connected && process.send(m);

const redlock = new Redlock({
  clients: cfg.urls,
  keyPrefix: 'f:',
  metaPrefix: 'fm:',
  logger: { warn: () => undefined },
  ...(cfg.jittered ? { waitStrategy: new JitteredRetry() } : {}),
  ...cfg.redlock,
});
const workload = cfg.workload ?? 'mutex';
// Another semaphore than the library's (semaphores.mjs), for the same workload.
const alt =
  workload === 'semaphore' && cfg.semaphore && cfg.semaphore !== 'library'
    ? new (await import('./semaphores.mjs'))[cfg.semaphore === 'per-node' ? 'PerNodeSemaphore' : 'PeerSemaphore'](
        cfg.urls,
        cfg.redlock,
      )
    : undefined;
const storeClient = cfg.storeUrl ? new Redis(cfg.storeUrl, { maxRetriesPerRequest: 2 }) : undefined;
storeClient?.on('error', () => undefined);
const store = storeClient && new FencedStore(storeClient, { prefix: 'ff:' });

// Register over IPC: one outstanding request per worker, matched by number.
let q = 0;
const pending = new Map();
process.on('message', (m) => {
  if (m.k === 'ping') send({ k: 'pong', seq: m.seq, t: now() });
  else if (m.k === 'stop') stopping = true;
  else if (m.k === 'val' || m.k === 'wack') {
    pending.get(m.q)?.(m);
    pending.delete(m.q);
  }
});
process.on('disconnect', () => process.exit(0));
const ask = (msg) =>
  new Promise((resolve) => {
    const n = ++q;
    pending.set(n, resolve);
    send({ ...msg, q: n });
  });

let stopping = false;
const hash = (v) => createHash('sha1').update(v).digest('hex').slice(0, 10);
// The library's own hash of a value, as in its diagnostics events (trace.mjs).
const libHash = (v) => createHash('sha256').update(v).digest('base64url').slice(0, 16);
if (cfg.trace) (await import('./trace.mjs')).startTrace(send, now);

async function section(lock, op) {
  // The register this operation may write: its resource's (a mutex, a
  // writer), its permit slot's (a library semaphore), none (a reader, a
  // semaphore without slots).
  const r = op.reg;
  const roll = Math.random();
  const overrun = roll < cfg.pOverrun;
  const watched = !overrun && roll < cfg.pOverrun + cfg.pWatch;
  let stopWatch;
  if (watched) stopWatch = redlock.watch(lock, { onLost: () => undefined });
  lock.signal.addEventListener('abort', () => {
    op.lostAt = now();
    // The library's promise: once the signal aborted, the lock no longer reads as held.
    if (lock.isHeld) op.heldAfterAbort++;
    send({ k: 'lost', id: op.id, t: op.lostAt, held: lock.isHeld });
  });
  const extend = !watched && !overrun && Math.random() < cfg.pExtend;
  // Read.
  let v;
  const key = 'reg:' + r;
  if (op.mode === 'read') v = (await ask({ k: 'read', r: op.r, id: op.id })).v;
  else if (r === undefined) v = undefined;
  else if (store) {
    try {
      v = Number((await store.get(lock, key)) ?? 0);
    } catch (e) {
      if (e?.name !== 'StaleFencingTokenError') throw e;
      op.rejected++;
      return stopWatch;
    }
  } else v = (await ask({ k: 'read', r, id: op.id })).v;
  if (cfg.checkBeforeGap && !(lock.remaining() > cfg.writeMargin)) return stopWatch;
  // Work.
  if (overrun) {
    // Holds past its validity, writes nothing, releases late: the release
    // must not touch a later holder's keys.
    await sleep(lock.remaining() + cfg.ttl * 0.2);
    return stopWatch;
  }
  if (watched) {
    const until = now() + cfg.ttl * cfg.watchHold;
    while (now() < until && !lock.signal.aborted) await sleep(cfg.ttl / 10);
    if (lock.signal.aborted && lock.isHeld) op.heldAfterAbort++;
  } else if (extend && cfg.extendAfter) {
    // A long section that extends its lock late in its lease.
    await sleep(rand(cfg.extendAfter[0], cfg.extendAfter[1]) * cfg.ttl);
  } else if (cfg.longGap && Math.random() < cfg.pLong) {
    await sleep(rand(cfg.longGap[0], cfg.longGap[1]));
  } else await sleep(rand(cfg.gap[0], cfg.gap[1]));
  if (extend && lock.isHeld) {
    const from = now();
    try {
      await lock.extend();
      op.exts++;
      send({ k: 'ext', id: op.id, from, t: now(), deadline: lock.validUntil });
    } catch {
      op.extFail++;
    }
  }
  // Write, only while the lock is held with a margin (the documented use).
  if (!cfg.checkBeforeGap && !(lock.remaining() > cfg.writeMargin)) return stopWatch;
  if (op.mode === 'read') {
    // A reader's second read, within its validity like a write: a writer
    // that came in between changed the register.
    const again = (await ask({ k: 'read', r: op.r, id: op.id })).v;
    if (again !== v) send({ k: 'torn', id: op.id, r: op.r, first: v, then: again, t: now() });
    return stopWatch;
  }
  if (r === undefined) return stopWatch;
  if (store) {
    try {
      await store.exec(lock, [
        ['SET', key, v + 1],
        ['RPUSH', 'log:' + r, `${lock.fencingToken} ${op.h} ${v}`],
      ]);
      op.wrote = true;
    } catch (e) {
      if (e?.name !== 'StaleFencingTokenError') throw e;
      op.rejected++;
    }
  } else {
    await ask({ k: 'write', r, from: v, to: v + 1, id: op.id });
    op.wrote = true;
  }
  return stopWatch;
}

async function worker(w) {
  let n = 0;
  while (!stopping) {
    const r = cfg.resources[Math.floor(Math.random() * cfg.resources.length)];
    const op = { id: `${cfg.id}.${w}.${n++}`, w, r, start: now(), heldAfterAbort: 0, exts: 0, extFail: 0, rejected: 0 };
    if (workload === 'rw') op.mode = Math.random() < cfg.pWrite ? 'write' : 'read';
    let lock;
    try {
      const options = { waitTimeout: cfg.waitTimeout, fencing: !!cfg.fenced };
      if (alt) lock = await alt.acquire(r, { permits: cfg.permits, waitTimeout: cfg.waitTimeout });
      else if (workload === 'semaphore') lock = await redlock.acquire(r, { ...options, permits: cfg.permits });
      else if (workload === 'rw') lock = await redlock.acquire(r, { ...options, mode: op.mode });
      else lock = await redlock.acquire(r, options);
    } catch (e) {
      send({
        k: 'done',
        ...op,
        end: now(),
        outcome: e?.reason ?? e?.name ?? 'error',
        msg: e?.reason ? undefined : String(e),
      });
      continue;
    }
    op.grant = now();
    op.h = hash(lock.value);
    if (cfg.trace) op.vh = libHash(lock.value);
    op.tok = lock.fencingToken;
    // A library semaphore's lock names the permit slot it holds.
    if (workload === 'semaphore' && !alt) op.slot = lock.resources[0];
    op.reg = op.mode === 'read' ? undefined : (op.slot ?? (workload === 'semaphore' ? undefined : r));
    send({
      k: 'grant',
      id: op.id,
      w,
      r,
      slot: op.slot,
      mode: op.mode,
      h: op.h,
      vh: op.vh,
      tok: op.tok,
      start: op.start,
      grant: op.grant,
      deadline: lock.validUntil,
    });
    let stopWatch;
    let error;
    try {
      stopWatch = await section(lock, op);
    } catch (e) {
      error = String(e?.stack ?? e);
    }
    op.release = now();
    // Told before the release goes out: a client killed while it is on
    // its way (the nodes may have deleted the keys already) held the lock
    // until here, not until the kill.
    send({ k: 'release', id: op.id, t: op.release });
    op.deadline = lock.validUntil;
    op.lost = lock.signal.aborted;
    stopWatch?.();
    await lock.release();
    if (op.lostAt !== undefined && lock.isHeld) op.heldAfterAbort++;
    send({ k: 'done', ...op, end: now(), outcome: 'granted', error });
  }
}

await redlock.ready(10_000);
await alt?.ready();
send({ k: 'ready' });
await Promise.all(Array.from({ length: cfg.workers }, (_, w) => worker(w)));
await redlock.quit();
await alt?.quit();
await storeClient?.quit().catch(() => undefined);
send({ k: 'stopped' });
process.disconnect?.();
