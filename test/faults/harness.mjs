// Runs one scenario: forks the client processes, holds the register, keeps
// every client's clock offset, runs the scenario's nemesis until the
// operation target (or the time cap) is reached, stops everything, and
// hands the history to the checker.
//
// One clock: the checker's, performance.timeOrigin + performance.now() of
// this process. Clients stamp events with the same expression in their own
// process; every 250 ms this process pings each client and, from the ping
// with the shortest round trip, takes offset = t_client - (t_sent + t_back) / 2,
// exact to within half that round trip (the client's stamp was taken
// between the two). Client times are corrected by that offset and the
// checker allows the two half round trips as the bound when it compares
// the times of two clients.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startProxy } from './proxy.mjs';
import { check } from './checker.mjs';

const CLIENT = fileURLToPath(new URL('./client.mjs', import.meta.url));
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Defaults every scenario starts from (its config() overrides them). */
export const DEFAULTS = {
  clients: 4,
  workers: 4,
  resources: ['hot-0', 'hot-1'],
  ttl: 500,
  nodeTimeout: 50,
  retryDelay: 20,
  retryJitter: 20,
  waitTimeout: 1500,
  gap: [1, 6],
  pLong: 0,
  longGap: undefined,
  pOverrun: 0.004,
  pWatch: 0,
  watchHold: 2,
  pExtend: 0,
  extendAfter: undefined,
  writeMargin: 50,
  checkBeforeGap: false,
  fenced: false,
  proxy: false,
  restartQuarantine: 0,
  // 'mutex', 'semaphore' (`permits` of them per resource; `semaphore`:
  // 'library', or 'per-node' / 'redis-semaphore', see semaphores.mjs) or
  // 'rw' (a writer with probability `pWrite`, otherwise a reader).
  workload: 'mutex',
  permits: 3,
  semaphore: 'library',
  pWrite: 0.2,
};

/**
 * The keys of `cfg`'s resources on a node, as the library names them
 * (keyPrefix 'f:', metaPrefix 'fm:'): a mutex's lock key, a semaphore's
 * key (its mark), holders and permit slots, a read/write lock's key,
 * readers and writer intent.
 */
export function lockKeys(cfg) {
  if (cfg.workload === 'semaphore')
    return cfg.resources.flatMap((r) => [
      `f:${r}`,
      `fm:ph:f:${r}`,
      ...Array.from({ length: cfg.permits }, (_, i) => `f:${r}#permit-${i}`),
    ]);
  if (cfg.workload === 'rw') return cfg.resources.flatMap((r) => [`f:${r}`, `fm:rd:f:${r}`, `fm:wi:f:${r}`]);
  return cfg.resources.map((r) => 'f:' + r);
}

/** Makes every server answer again and empties it (between scenarios). */
export async function resetServers(servers) {
  for (const s of servers) s.thaw();
  await Promise.all(servers.filter((s) => s.pid === undefined).map((s) => s.restart()));
  await Promise.all(
    servers.map(async (s) => {
      const c = s.client();
      try {
        await c.flushall();
      } finally {
        c.disconnect();
      }
    }),
  );
}

/**
 * Runs `scenario` with `ops` lock operations (at most `maxMs`) against
 * `servers` (5 lock nodes) and `store` (the fenced store's Redis), using
 * the library built in `dist`. Resolves with the checker's report.
 */
export async function runScenario({ scenario, ops: target, maxMs, servers, store, dist, log }) {
  const cfg = { ...DEFAULTS, ...scenario.config, trace: !!process.env.FAULTS_TRACE };
  const started = now();
  const ops = new Map(); // id -> op (client times corrected when checked)
  const lostUpdates = [];
  const torn = [];
  const traces = [];
  const register = new Map();
  const notes = { faults: 0, kinds: {}, kills: [], errors: [], log: [] };
  let done = 0;
  let grants = 0;
  let stopping = false;
  let clientSeq = 0;
  const clients = [];
  const everyClient = [];

  const proxy = cfg.proxy
    ? await startProxy(
        Array.from({ length: cfg.clients }, (_, c) =>
          servers.map((s, n) => ({ id: `${c}:${n}`, port: s.port })),
        ).flat(),
      )
    : undefined;

  function fork1(slot) {
    const id = `c${clientSeq++}`;
    const urls = servers.map((s, n) => (proxy ? `redis://127.0.0.1:${proxy.ports[`${slot}:${n}`]}` : s.url));
    const env = {
      ...process.env,
      FAULTS_CLIENT: JSON.stringify({
        ...cfg,
        id,
        dist,
        urls,
        storeUrl: cfg.fenced ? store.url : undefined,
        redlock: {
          ttl: cfg.ttl,
          nodeTimeout: cfg.nodeTimeout,
          retryDelay: cfg.retryDelay,
          retryJitter: cfg.retryJitter,
          restartQuarantine: cfg.restartQuarantine,
          ...(cfg.redlock ?? {}),
        },
      }),
    };
    const child = fork(CLIENT, [], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const client = {
      id,
      slot,
      child,
      best: { rtt: Infinity, offset: 0 },
      pings: new Map(),
      ready: false,
      stopped: false,
      exited: false,
    };
    child.on('exit', () => (client.exited = true));
    child.on('error', () => undefined);
    child.on('message', (m) => onMessage(client, m));
    clients[slot] = client;
    everyClient.push(client);
    client.readyP = new Promise((r) => (client.onReady = r));
    client.stoppedP = new Promise((r) => (client.onStopped = r));
    child.on('exit', () => client.onStopped());
    return client;
  }
  const reply = (client, m) => client.child.connected && client.child.send(m);

  function onMessage(client, m) {
    const t = now();
    switch (m.k) {
      case 'ready':
        client.ready = true;
        client.onReady();
        break;
      case 'pong': {
        const sent = client.pings.get(m.seq);
        client.pings.delete(m.seq);
        if (sent !== undefined && t - sent < client.best.rtt)
          client.best = { rtt: t - sent, offset: m.t - (sent + t) / 2 };
        break;
      }
      case 'grant':
        grants++;
        ops.set(m.id, { ...m, c: client.id, recvGrant: t });
        break;
      case 'ext': {
        const op = ops.get(m.id);
        if (op) {
          op.firstDeadline ??= op.deadline;
          op.deadline = Math.max(op.deadline, m.deadline);
          (op.extLog ??= []).push([m.from, m.t, m.deadline]);
        }
        break;
      }
      case 'release': {
        const op = ops.get(m.id);
        if (op) op.release = m.t;
        break;
      }
      case 'lost': {
        const op = ops.get(m.id);
        if (op) op.lostAt = m.t;
        break;
      }
      case 'done':
        done++;
        ops.set(m.id, { ...ops.get(m.id), ...m, c: client.id, finished: true });
        if (m.error) notes.errors.push(m.error);
        break;
      case 'read':
        reply(client, { k: 'val', q: m.q, v: register.get(m.r) ?? 0 });
        break;
      case 'write': {
        const current = register.get(m.r) ?? 0;
        if (current !== m.from) lostUpdates.push({ id: m.id, r: m.r, read: m.from, found: current, t });
        register.set(m.r, m.to);
        const op = ops.get(m.id);
        if (op) op.wroteAt = t;
        reply(client, { k: 'wack', q: m.q });
        break;
      }
      case 'torn':
        torn.push({ ...m, c: client.id });
        break;
      case 'trace':
        traces.push({ c: client.id, t: m.t, ch: m.ch, ...m.m });
        break;
      case 'stopped':
        client.stopped = true;
        client.onStopped();
        break;
    }
  }

  let pingSeq = 0;
  const pinger = setInterval(() => {
    for (const c of everyClient) {
      if (c.exited || !c.child.connected) continue;
      const seq = ++pingSeq;
      c.pings.set(seq, now());
      c.child.send({ k: 'ping', seq });
    }
  }, 250);

  for (let slot = 0; slot < cfg.clients; slot++) fork1(slot);
  await Promise.race([Promise.all(clients.map((c) => c.readyP)), sleep(20_000)]);

  // What the nemesis may do.
  const h = {
    cfg,
    servers,
    proxy,
    clients,
    sleep,
    now,
    get stopping() {
      return stopping;
    },
    fault(kind, n = 1, detail = undefined) {
      notes.faults += n;
      notes.kinds[kind] = (notes.kinds[kind] ?? 0) + n;
      notes.log.push([now(), kind, detail]);
    },
    /** Ids of ops granted and not finished, per client id. */
    holding(clientId) {
      return [...ops.values()].filter((o) => o.c === clientId && o.grant !== undefined && !o.finished);
    },
    /** kill -9 of a client process, and a fresh client in its slot. */
    async killClient(slot) {
      const victim = clients[slot];
      const held = h.holding(victim.id).map((o) => ({ id: o.id, r: o.r, slot: o.slot, deadline: o.deadline }));
      victim.child.kill('SIGKILL');
      notes.kills.push({ client: victim.id, t: now(), held });
      victim.killed = true;
      await victim.stoppedP;
      const next = fork1(slot);
      await Promise.race([next.readyP, sleep(10_000)]);
      return held;
    },
    /** A forward clock jump of `deltaMs` on node `i`, as far as lock keys can tell. */
    async jump(i, deltaMs) {
      const c = new Redis(servers[i].url, { maxRetriesPerRequest: 1, connectTimeout: 500 });
      c.on('error', () => undefined);
      try {
        const keys = lockKeys(cfg);
        // A sorted set of readers holds each one's expiry on the node's
        // clock (ms): those come Δ closer too.
        await c.eval(
          `for _, k in ipairs(KEYS) do
             if redis.call('TYPE', k).ok == 'zset' then
               local m = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
               for j = 1, #m, 2 do redis.call('ZADD', k, tonumber(m[j + 1]) - tonumber(ARGV[1]), m[j]) end
             end
             local p = redis.call('PTTL', k)
             if p > 0 then
               if p - tonumber(ARGV[1]) <= 0 then redis.call('DEL', k)
               else redis.call('PEXPIRE', k, p - tonumber(ARGV[1])) end
             end
           end return 1`,
          keys.length,
          ...keys,
          deltaMs,
        );
      } finally {
        c.disconnect();
      }
    },
  };

  const nemesis = (scenario.nemesis ?? (async () => undefined))(h).catch((e) =>
    notes.errors.push('nemesis: ' + (e?.stack ?? e)),
  );
  while (done < target && now() - started < maxMs && clients.some((c) => !c.exited)) await sleep(100);
  stopping = true;
  await nemesis;
  await proxy?.heal();
  for (const s of servers) s.thaw();
  const stopAt = now();
  for (const c of clients) if (c.child.connected) c.child.send({ k: 'stop' });
  // Every worker finishes its operation within its bounds: waitTimeout,
  // a final attempt and take-back (2 ttl), the work, plus slack.
  const grace = cfg.waitTimeout + 4 * cfg.ttl * (cfg.watchHold ?? 1) + 10_000;
  await Promise.race([Promise.all(clients.map((c) => c.stoppedP)), sleep(grace)]);
  const hung = clients.filter((c) => !c.stopped && !c.exited && !c.killed).map((c) => c.id);
  for (const c of clients) if (!c.exited) c.child.kill('SIGKILL');
  clearInterval(pinger);
  await proxy?.stop();
  const storeLogs = cfg.fenced ? await readLogs(store) : undefined;

  const offsets = Object.fromEntries(everyClient.map((c) => [c.id, c.best]));
  // FAULTS_DUMP=dir keeps each scenario's raw history, for a closer look.
  if (process.env.FAULTS_DUMP)
    writeFileSync(
      join(process.env.FAULTS_DUMP, `${scenario.name}-${Date.now()}.json`),
      JSON.stringify({
        cfg,
        offsets,
        ops: [...ops.values()],
        lostUpdates,
        torn,
        kills: notes.kills,
        faults: notes.log,
        traces,
      }),
    );
  return check({
    cfg,
    ops: [...ops.values()],
    offsets,
    lostUpdates,
    torn,
    storeLogs,
    kills: notes.kills,
    hung,
    stopAt,
    notes,
    started,
    checks: scenario.checks,
  });
}

/** The fenced store's log of each register (a resource, or a permit slot). */
async function readLogs(store) {
  const c = store.client();
  try {
    const logs = {};
    for (const key of await c.keys('log:*')) logs[key.slice(4)] = await c.lrange(key, 0, -1);
    return logs;
  } finally {
    c.disconnect();
  }
}
