// `npm run bench:cluster` (and the last part of `npm run bench`): does a
// Redis Cluster as the quorum's one node scale with its shards? 64
// concurrent workers, each locking and unlocking its own key again and
// again (`Redlock.acquire(key, { ttl })` then `release()`), against a
// Cluster of 1, 2 and 3 masters, and against one plain redis-server (the
// reference: what the cluster costs per lock); plus 64 workers each
// locking 2 resources on different shards of the 3-shard cluster. Rounds
// are interleaved (every target once per round) and the report gives
// medians and min-max over rounds of locks/s, client CPU per lock
// (process.cpuUsage of the client process) and server CPU per lock (utime +
// stime of every redis-server of the target, from /proc). The client runs
// in a child process of its own (this file with --child), held to core 0
// while the servers are held to core 1 where there are 2+ cores, so the two
// sides don't take each other's CPU. Writes bench/CLUSTER.md. Options:
//   --quick          a short run (under a minute)
//   --rounds=N       rounds (default 3, quick 2)
//   --window-ms=MS   measured window of a run (default 3000, quick 1000)
//   --warm-ms=MS     unmeasured load before each window (default 700, quick 300)
//   --no-write       don't write bench/CLUSTER.md
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const self = fileURLToPath(import.meta.url);
const WORKERS = 64;
const TTL = 10_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** utime + stime (clock ticks) of each pid, from /proc/<pid>/stat. */
function ticksOf(pids) {
  return pids.map((pid) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  });
}

/**
 * The client side of one run: 64 workers under load for warmMs, then a
 * window of windowMs in which lock+unlock pairs, this process's CPU and the
 * servers' CPU are counted, read here so the window is the same for all.
 */
async function childRun({ clients, resources, warmMs, windowMs, pids }) {
  const { Redlock } = await import('../dist/esm/index.js');
  const redlock = new Redlock({ clients });
  const errors = {};
  let stop = false;
  let counting = false;
  let pairs = 0;
  let total = 0;
  let notReleased = 0;
  const workers = resources.map(async (resource) => {
    while (!stop) {
      try {
        const lock = await redlock.acquire(resource, { ttl: TTL });
        const result = await lock.release();
        if (!result.released) notReleased++;
        if (counting) pairs++;
        total++;
      } catch (error) {
        const message = `${error?.name}: ${error?.message}`.slice(0, 300);
        errors[message] = (errors[message] ?? 0) + 1;
        await sleep(10);
      }
    }
  });
  await sleep(warmMs);
  const ticks0 = ticksOf(pids);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  counting = true;
  await sleep(windowMs);
  counting = false;
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const ticks = ticksOf(pids).map((t, i) => t - ticks0[i]);
  const counted = pairs;
  stop = true;
  await Promise.all(workers);
  await redlock.quit();
  return { pairs: counted, total, elapsedMs, clientUs: cpu.user + cpu.system, clientSysUs: cpu.system, ticks, errors, notReleased };
}

async function childMain() {
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (msg) => {
    try {
      if (msg.cmd === 'exit') process.exit(0);
      process.send({ result: await childRun(msg) });
    } catch (error) {
      process.send({ error: String(error?.stack ?? error) });
    }
  });
  process.send({ ready: true });
}

async function parentMain() {
  const { startServers } = await import('../scripts/redis-nodes.mjs');
  const { startCluster } = await import('../scripts/redis-clusters.mjs');
  const { default: calculateSlot } = await import('cluster-key-slot');
  const { median, parseFlags } = await import('./util.mjs');

  const args = parseFlags();
  const quick = Boolean(args.quick);
  const config = {
    rounds: Number(args.rounds ?? (quick ? 2 : 3)),
    windowMs: Number(args['window-ms'] ?? (quick ? 1000 : 3000)),
    warmMs: Number(args['warm-ms'] ?? (quick ? 300 : 700)),
  };
  const pin = cpus().length >= 2;
  const tickUs = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  const t0 = Date.now();
  const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

  let plain;
  const clusters = [];
  let child;
  let plainAdmin;
  let cleaned;
  const cleanup = () =>
    (cleaned ??= (async () => {
      if (child?.pid && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
      plainAdmin?.disconnect();
      await Promise.allSettled([plain?.stop(), ...clusters.map((c) => c.stop())]);
    })());
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.once(signal, () => cleanup().finally(() => process.exit(130)));

  const results = {};
  const targets = [];
  let serverVersion;
  try {
    // Cluster starts are slow (~2 s, Redis's writable delay): all at once.
    const started = await Promise.all([
      startServers(1),
      ...[1, 2, 3].map((k) => startCluster({ masters: k, replicas: 0 }).then((c) => (clusters[k - 1] = c))),
    ]);
    plain = started[0][0];
    plainAdmin = plain.client();
    const admin = clusters[0].servers[0].admin();
    serverVersion = (await admin.info('server')).match(/redis_version:(\S+)/)?.[1];
    const pids = [plain.pid, ...clusters.flatMap((c) => c.servers.map((s) => s.pid))];
    if (pin) for (const pid of pids) execFileSync('taskset', ['-a', '-p', '-c', '1', String(pid)], { stdio: 'ignore' });
    log(`servers up: 1 plain + clusters of 1, 2, 3 masters${pin ? ' (servers on core 1, client on core 0)' : ''}`);

    /** Server index (in cluster.servers) owning each slot, from CLUSTER SLOTS. */
    const owners = async (cluster) => {
      const byPort = new Map(cluster.servers.map((s, i) => [s.port, i]));
      const slots = await cluster.servers[0].admin().cluster('SLOTS');
      const owner = new Array(16384);
      for (const [from, to, [, port]] of slots) for (let s = from; s <= to; s++) owner[s] = byPort.get(port);
      return (resource) => owner[calculateSlot(`{${resource}}`)];
    };
    const single = Array.from({ length: WORKERS }, (_, w) => `w${w}`);
    targets.push({ id: 'plain', label: '1 plain redis-server (reference)', shards: 1, admins: [plainAdmin], clients: [plain.url], pids: [plain.pid], resources: single, perShard: [WORKERS] });
    for (const k of [1, 2, 3]) {
      const cluster = clusters[k - 1];
      const shardOf = await owners(cluster);
      const perShard = Array(k).fill(0);
      for (const r of single) perShard[shardOf(r)]++;
      targets.push({ id: `c${k}`, label: `Cluster, ${k} shard${k > 1 ? 's' : ''}`, shards: k, admins: cluster.servers.map((s) => s.admin()), clients: [{ cluster: cluster.seeds }], pids: cluster.servers.map((s) => s.pid), resources: single, perShard });
    }
    // The same as the 3-shard row with ioredis's auto-pipelining on the
    // Cluster: a plain node coalesces a tick's requests into one write
    // (RedlockNode.run), a Cluster node does not; this row shows what
    // batching would save there.
    targets.push({ ...targets.at(-1), id: 'auto3', label: 'Cluster, 3 shards, `enableAutoPipelining: false` (one write per request)', clients: [{ cluster: clusters[2].seeds, options: { enableAutoPipelining: false } }] });
    // Multi-resource: the second resource of a worker on another shard than its first.
    const c3 = clusters[2];
    const shardOf3 = await owners(c3);
    const pairsOfResources = single.map((a) => {
      const first = `m${a}`;
      let j = 0;
      while (shardOf3(`m${a}.${j}`) === shardOf3(first)) j++;
      return [first, `m${a}.${j}`];
    });
    const perShard3 = [0, 0, 0];
    for (const rs of pairsOfResources) for (const r of rs) perShard3[shardOf3(r)]++;
    targets.push({ id: 'multi', label: 'Cluster, 3 shards, 2 resources per lock (on 2 shards)', shards: 3, admins: c3.servers.map((s) => s.admin()), clients: [{ cluster: c3.seeds }], pids: c3.servers.map((s) => s.pid), resources: pairsOfResources, perShard: perShard3 });

    const argv = [self, '--child'];
    child = pin ? spawn('taskset', ['-c', '0', process.execPath, ...argv], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }) : spawn(process.execPath, argv, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`client process exited (${code})`)));
    });
    child.removeAllListeners('exit');
    const ask = (msg) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('client process timed out')), msg.warmMs + msg.windowMs + 30_000);
        child.once('message', (reply) => {
          clearTimeout(timer);
          if (reply.error) reject(new Error(reply.error));
          else resolve(reply.result);
        });
        child.send(msg);
      });
    /**
     * A run, and the commands its servers executed (INFO commandstats,
     * reset before): calls and Redis's own µs in them per lock, over every
     * pair of the run (warm-up included), by command.
     */
    const run = async (t, warmMs, windowMs) => {
      await Promise.all(t.admins.map((a) => a.config('RESETSTAT')));
      const r = await ask({ cmd: 'run', clients: t.clients, resources: t.resources, pids: t.pids, warmMs, windowMs });
      r.commands = {};
      r.reads = 0;
      for (const info of await Promise.all(t.admins.map((a) => a.info('stats'))))
        r.reads += Number(info.match(/total_reads_processed:(\d+)/)?.[1] ?? NaN) / r.total;
      for (const info of await Promise.all(t.admins.map((a) => a.info('commandstats'))))
        for (const [, name, calls, usec] of info.matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)) {
          if (/^(config|info)/.test(name)) continue;
          const c = (r.commands[name] ??= { calls: 0, usec: 0 });
          c.calls += Number(calls) / r.total;
          c.usec += Number(usec) / r.total;
        }
      return r;
    };

    // One unmeasured run of each target first: round 1 would otherwise pay
    // for compiling the code all of them share.
    for (const t of targets) await run(t, config.warmMs, config.warmMs);
    log('warmed up');
    for (let round = 0; round < config.rounds; round++) {
      for (const t of targets) {
        const r = await run(t, config.warmMs, config.windowMs);
        const serverUs = r.ticks.reduce((a, b) => a + b, 0) * tickUs;
        const row = {
          locksPerSec: (r.pairs / r.elapsedMs) * 1000,
          clientUs: r.clientUs / r.pairs,
          clientSysUs: r.clientSysUs / r.pairs,
          serverUs: serverUs / r.pairs,
          maxShardUs: (Math.max(...r.ticks) * tickUs) / r.pairs,
          maxShare: serverUs ? (100 * Math.max(...r.ticks) * tickUs) / serverUs : NaN,
          clientCore: (100 * r.clientUs) / (r.elapsedMs * 1000),
          serverCore: (100 * serverUs) / (r.elapsedMs * 1000),
          cmdsPerLock: Object.values(r.commands).reduce((a, c) => a + c.calls, 0),
          cmdsPerRead: Object.entries(r.commands)
            .filter(([name]) => name.startsWith('eval'))
            .reduce((a, [, c]) => a + c.calls, 0) / r.reads,
          cmdUs: Object.values(r.commands).reduce((a, c) => a + c.usec, 0),
          commands: r.commands,
          errors: Object.values(r.errors).reduce((a, b) => a + b, 0) + r.notReleased,
          errorMessages: { ...r.errors, ...(r.notReleased ? { 'release(): released false': r.notReleased } : {}) },
        };
        (results[t.id] ??= []).push(row);
        log(`round ${round + 1} ${t.label}: ${row.locksPerSec.toFixed(0)} locks/s, client ${row.clientUs.toFixed(1)} µs/lock, servers ${row.serverUs.toFixed(1)} µs/lock, ${row.cmdsPerLock.toFixed(2)} cmds/lock${row.errors ? `, ${row.errors} errors: ${Object.keys(row.errorMessages)[0]}` : ''}`);
      }
    }
    child.send({ cmd: 'exit' });
  } finally {
    await cleanup();
  }

  const report = render({ config, targets, results, serverVersion, pin, tickUs, median, seconds: (Date.now() - t0) / 1000 });
  console.log('\n' + report);
  if (!args['no-write']) {
    writeFileSync(join(here, 'CLUSTER.md'), report);
    console.log(`written to bench/CLUSTER.md (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
}

function render({ config, targets, results, serverVersion, pin, tickUs, median, seconds }) {
  const stat = (id, key) => {
    const values = results[id].map((r) => r[key]);
    return { med: median(values), min: Math.min(...values), max: Math.max(...values) };
  };
  const cell = (id, key, digits) => {
    const { med, min, max } = stat(id, key);
    if (med === undefined || !Number.isFinite(med)) return '–';
    return `${med.toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
  };
  const cmdArgs = process.argv.slice(2).filter((a) => a !== '--child');
  const lines = [
    '# Cluster scale benchmark',
    '',
    `Command: \`npm run bench:cluster${cmdArgs.length ? ' -- ' + cmdArgs.join(' ') : ''}\` (also the last part of \`npm run bench\`), ${new Date().toISOString().slice(0, 16)}Z, ${seconds.toFixed(0)} s.`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, redis-server ${serverVersion}, ${process.platform}; clock tick ${tickUs} µs.`,
    `Load: ${WORKERS} concurrent workers in one client process, each locking and unlocking its own key again and again through this library's \`Redlock\` (\`acquire(key, { ttl: ${TTL} })\` then \`release()\`), with ONE node: a Redis Cluster of k masters (no replicas; keys carry hash tags, \`lock:{w7}\`), or the reference, one plain redis-server. The last row locks 2 resources per lock, on 2 different shards.`,
    `Client on ${pin ? 'core 0 (taskset), every redis-server on core 1' : 'any core, servers too (1 core)'}: the whole cluster shares ${pin ? 'one core' : 'the machine'}, so the absolute rate is bounded by CPU, not by the design.`,
    `Figures: median (min–max) of ${config.rounds} interleaved rounds (every target once per round, in the order of the table), ${config.windowMs / 1000} s windows after ${config.warmMs / 1000} s of unmeasured load, after one unmeasured run of each target. Other work runs on this small shared machine now and then: compare the rows (ratios) within this run, not with other runs.`,
    'Columns: locks/s = lock+unlock pairs per second; client µs/lock = CPU (user + system) of the client process per pair; server µs/lock = CPU of all the target\'s redis-servers per pair; max shard = the busiest shard\'s CPU per pair and its share of the servers\' CPU; % core = CPU over wall time; server cmds/lock and in commands µs/lock = calls and Redis\'s own time inside them (INFO commandstats, warm-up included), per pair: the rest of the server CPU is network I/O and the event loop; scripts per read = EVALSHA calls per socket read of the servers (total_reads_processed): how many commands arrive together.',
    'Every server is started with `--cluster-announce-ip 127.0.0.1`: a Cluster of 1 master never learns its address from another node, and its CLUSTER SLOTS would give an empty host.',
    '',
    '| target | keys per shard | locks/s | client µs/lock | of which system | server µs/lock | max shard µs/lock | max shard share % | client % core | servers % core | server cmds/lock | in commands µs/lock | scripts per read | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const t of targets) {
    if (!results[t.id]) continue;
    const errors = results[t.id].reduce((a, r) => a + r.errors, 0);
    lines.push(
      `| ${t.label} | ${t.perShard.join(' / ')} | ${cell(t.id, 'locksPerSec', 0)} | ${cell(t.id, 'clientUs', 1)} | ${cell(t.id, 'clientSysUs', 1)} | ${cell(t.id, 'serverUs', 1)} | ${cell(t.id, 'maxShardUs', 1)} | ${cell(t.id, 'maxShare', 0)} | ${cell(t.id, 'clientCore', 0)} | ${cell(t.id, 'serverCore', 0)} | ${cell(t.id, 'cmdsPerLock', 2)} | ${cell(t.id, 'cmdUs', 1)} | ${cell(t.id, 'cmdsPerRead', 2)} | ${errors} |`,
    );
  }
  lines.push('');
  lines.push('Commands the servers executed per lock (INFO commandstats over the last round\'s run, warm-up included; calls, and µs inside the command):', '');
  for (const t of targets) {
    const last = results[t.id]?.at(-1);
    if (!last) continue;
    const list = Object.entries(last.commands)
      .filter(([, c]) => c.calls >= 0.005)
      .sort((a, b) => b[1].calls - a[1].calls)
      .map(([name, c]) => `${name} ${c.calls.toFixed(2)} (${c.usec.toFixed(1)} µs)`);
    lines.push(`- ${t.label}: ${list.join(', ')}`);
  }
  lines.push('');
  const errorLines = [];
  for (const t of targets) {
    const all = {};
    for (const r of results[t.id] ?? []) for (const [m, n] of Object.entries(r.errorMessages)) all[m] = (all[m] ?? 0) + n;
    for (const [m, n] of Object.entries(all)) errorLines.push(`- ${t.label}: ${n} × \`${m}\``);
  }
  if (errorLines.length) lines.push('Errors over all rounds:', '', ...errorLines, '');
  lines.push(...projection(targets, results, stat), '');
  return lines.join('\n');
}

/** What k shards on hosts of their own could sustain, from the measured CPU per lock. */
function projection(targets, results, stat) {
  const has = (id) => results[id]?.length;
  if (!['plain', 'c1', 'c3'].every(has)) return [];
  const f = (v, d = 1) => v.toFixed(d);
  const k0 = (v) => Math.round(v).toLocaleString('en-US');
  const S = (id) => stat(id, 'serverUs').med;
  const C = (id) => stat(id, 'clientUs').med;
  const out = ['## Projection', ''];
  out.push(
    `Server CPU per lock: plain ${f(S('plain'))} µs, Cluster of 1 ${f(S('c1'))} µs (× ${f(S('c1') / S('plain'), 2)} the plain server), of 2 ${has('c2') ? f(S('c2')) : '?'} µs, of 3 ${f(S('c3'))} µs (× ${f(S('c3') / S('c1'), 2)} the Cluster of 1). ` +
      `Client CPU per lock: plain ${f(C('plain'))} µs, Cluster of 1 ${f(C('c1'))} µs, of 3 ${f(C('c3'))} µs (× ${f(C('c3') / C('plain'), 2)} the plain server). ` +
      'Each lock\'s server work lands on the one shard owning its key, so a shard on a core of its own sustains about 1e6 / (server µs per lock) locks/s, and k shards k times that when keys spread evenly (or that ÷ the busiest shard\'s share when they do not).',
    '',
  );
  const perShard = 1e6 / S('c3');
  const client = 1e6 / C('c3');
  const share = stat('c3', 'maxShare').med / 100;
  out.push(
    `- One shard: 1e6 / ${f(S('c3'))} µs = ${k0(perShard)} locks/s per core (measured on the 3-shard cluster; 1e6 / ${f(S('c1'))} = ${k0(1e6 / S('c1'))} on the Cluster of 1).`,
    `- k shards on separate hosts, keys spread evenly: k × ${k0(perShard)}: ${[1, 2, 3, 6, 10].map((k) => `${k} → ${k0(k * perShard)}`).join(', ')} locks/s.`,
    `- With this run's 64 keys on 3 shards (busiest shard ${f(100 * share, 0)} % of the server CPU): ${k0(perShard)} / ${f(share, 2)} = ${k0(perShard / share)} locks/s for the 3 shards.`,
    `- The client: 1e6 / ${f(C('c3'))} µs = ${k0(client)} locks/s per client core; saturating k shards takes (k × ${k0(perShard)}) / ${k0(client)} = k × ${f(C('c3') / S('c3'), 2)} client cores (${[3, 10].map((k) => `${k} shards: ${f((k * C('c3')) / S('c3'), 1)} cores`).join(', ')}).`,
  );
  if (has('auto3')) {
    const sys = (id) => stat(id, 'clientSysUs').med;
    const user = (id) => C(id) - sys(id);
    const X = stat('auto3', 'serverUs').med;
    out.push(
      `- Unbatched (the \`enableAutoPipelining: false\` row; the library turns auto-pipelining on for the Clusters it creates): ${f(X)} µs server and ${f(C('auto3'))} µs client per lock (${f(sys('auto3'))} system), against ${f(S('c3'))} and ${f(C('c3'))} µs (${f(sys('c3'))} system) batched. ` +
        `Unbatched, each request leaves in a write of its own (${f(stat('auto3', 'cmdsPerRead').med, 2)} scripts per server read, against ${f(stat('c3', 'cmdsPerRead').med, 2)} batched and ${f(stat('plain', 'cmdsPerRead').med, 2)} from a plain node, whose requests of one tick leave in one write): ${f(X - S('c3'))} µs more server CPU per lock, and more client system CPU. ` +
        `The client's extra user CPU over a plain node (${f(user('c3'))} against ${f(user('plain'))} µs) is ioredis's Cluster command path and the library's Cluster node.`,
    );
  }
  if (has('multi'))
    out.push(
      `- 2 resources on 2 shards per lock: ${f(stat('multi', 'serverUs').med)} µs server and ${f(stat('multi', 'clientUs').med)} µs client per lock (× ${f(stat('multi', 'serverUs').med / S('c3'), 2)} and × ${f(stat('multi', 'clientUs').med / C('c3'), 2)} a single-resource lock).`,
    );
  out.push(
    '',
    'Server CPU per lock depends on how many requests arrive in one read, so on the load: these figures are those of this load (64 workers, one client process); more clients per shard batch more.',
    '',
    'On this machine the measured rate is bounded by its 2 cores (the client on one, every server on the other): the rows show what each lock costs on either side, and whether that cost stays flat as shards are added, not what separate hosts would reach.',
  );
  return out;
}

if (process.argv.includes('--child')) await childMain();
else await parentMain();
