// The parent's side of bench/semaphore.mjs and bench/rwlock.mjs: the client
// processes (bench/permits-worker.mjs, forked once and reused by every run),
// one run of a cell over them, and what the holds they report add up to.
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, sleep } from './util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** µs on CLOCK_MONOTONIC, as the workers read it. */
export const hr = () => Number(process.hrtime.bigint()) / 1000;

/** `count` long-lived client processes. */
export async function forkWorkers(count) {
  return Promise.all(
    Array.from({ length: count }, () => {
      // 'advanced': typed arrays of holds travel as such, not as JSON objects.
      const child = fork(join(here, 'permits-worker.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
      return new Promise((resolve) => child.once('message', () => resolve(child)));
    }),
  );
}

export function ask(child, msg) {
  return new Promise((resolve, reject) => {
    child.once('message', (reply) => (reply.error ? reject(new Error(reply.error)) : resolve(reply)));
    child.send(msg);
  });
}

export async function stopWorkers(children) {
  await Promise.all(
    children.map((c) => {
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.send({ cmd: 'exit' });
      return exited;
    }),
  );
}

/** CPU time, in µs, the given servers have used so far (INFO cpu). */
export async function serverCpu(admin) {
  const infos = await Promise.all(admin.map((c) => c.info('cpu')));
  const field = (info, name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return infos.reduce((sum, info) => sum + (field(info, 'used_cpu_user') + field(info, 'used_cpu_sys')) * 1e6, 0);
}

/**
 * One run: `plan` is one entry per client process used, each a list of
 * loop groups ({ role, loops, key, distinct?, holdMs, pauseMs? }). Every process
 * creates its library instance, then all start at the same moment and
 * ask for locks for `ms`; loops waiting at the end finish their wait.
 * Returns { groups: { role: merged holds }, window, cpuUs, commands,
 * serverUs, stats, elapsedMs }.
 */
export async function runPlan(children, plan, { lib, urls, opts, ms, admin }) {
  const used = plan.map((_, i) => children[i]);
  await Promise.all(used.map((c) => ask(c, { cmd: 'setup', lib, urls, opts })));
  const startAt = hr() + 100_000;
  const endAt = startAt + ms * 1000;
  const server0 = admin ? await serverCpu(admin) : 0;
  const replies = await Promise.all(used.map((c, i) => ask(c, { cmd: 'go', groups: plan[i], startAt, endAt })));
  const serverUs = admin ? (await serverCpu(admin)) - server0 : undefined;
  const groups = {};
  replies.forEach((reply, i) =>
    reply.groups.forEach((g, j) => {
      const role = plan[i][j].role;
      const into = (groups[role] ??= { intervals: [], waits: [], gaveUps: 0, errors: [] });
      into.intervals.push(g.intervals);
      into.waits.push(g.waits);
      into.gaveUps += g.gaveUps;
      if (g.lastError) into.errors.push(g.lastError);
    }),
  );
  const stats = {};
  for (const r of replies) for (const [k, v] of Object.entries(r.stats)) stats[k] = (stats[k] ?? 0) + v;
  await sleep(20);
  return {
    groups,
    window: [startAt, endAt],
    cpuUs: replies.reduce((a, r) => a + r.cpuUs, 0),
    commands: replies.reduce((a, r) => a + r.commands, 0),
    serverUs,
    stats,
    elapsedMs: (Math.max(...replies.map((r) => r.finishedAt)) - startAt) / 1000,
  };
}

/** Every hold of a list of Float64Arrays ([start, end, start, end, ...]) as events. */
function events(lists, weight = 1) {
  const out = [];
  for (const list of lists) for (let i = 0; i < list.length; i += 2) out.push([list[i], weight], [list[i + 1], -weight]);
  return out;
}

/** Ends before starts at the same instant: a hold that ends as another starts does not overlap it. */
const byTime = (a, b) => a[0] - b[0] || a[1] - b[1];

/** The most holds of `lists` that overlapped at any instant. */
export function maxOverlap(lists) {
  const all = events(lists).sort(byTime);
  let inside = 0;
  let most = 0;
  for (const [, d] of all) {
    inside += d;
    if (inside > most) most = inside;
  }
  return most;
}

/**
 * Read/write exclusion over the holds: the most readers at once, the
 * most writers at once, and the instants (events) at which a writer held
 * together with anyone else. Writers count 1000 in the sweep, readers 1.
 */
export function readWriteOverlap(readLists, writeLists) {
  const all = [...events(readLists, 1), ...events(writeLists, 1000)].sort(byTime);
  let inside = 0;
  let readers = 0;
  let writers = 0;
  let shared = 0;
  for (const [, d] of all) {
    inside += d;
    const w = Math.floor(inside / 1000);
    const r = inside % 1000;
    readers = Math.max(readers, r);
    writers = Math.max(writers, w);
    if (d > 0 && w > 0 && inside > 1000) shared++;
  }
  return { maxReaders: readers, maxWriters: writers, writerShared: shared };
}

/** Holds of `lists` granted within [from, to), their count, and the mean holders over the window. */
export function windowFigures(lists, [from, to]) {
  let granted = 0;
  let heldUs = 0;
  for (const list of lists)
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] >= from && list[i] < to) granted++;
      heldUs += Math.max(0, Math.min(to, list[i + 1]) - Math.max(from, list[i]));
    }
  const seconds = (to - from) / 1e6;
  return { perSec: granted / seconds, inUse: heldUs / (to - from) };
}

/** Wait figures (ms) over every grant of `lists`. */
export function waitFigures(lists) {
  const all = [];
  for (const list of lists) for (const w of list) all.push(w);
  all.sort((a, b) => a - b);
  return {
    meanWaitMs: all.length ? all.reduce((a, b) => a + b, 0) / all.length : undefined,
    p99WaitMs: percentile(all, 99),
    maxWaitMs: all.length ? all[all.length - 1] : undefined,
    grants: all.length,
  };
}
