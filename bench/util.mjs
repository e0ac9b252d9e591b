// Small helpers shared by the bench runner and its worker processes.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { Redis } from 'ioredis';

/**
 * Holds `servers` (redis-server processes, with their threads) to core 1
 * and this process to core 0, so that client and Redis do not share a core
 * (as when the app's own work shares the client's core). Does nothing on a
 * single core; returns whether it pinned.
 */
export function pinApart(servers) {
  if (cpus().length < 2) return false;
  for (const s of servers) execFileSync('taskset', ['-a', '-p', '-c', '1', String(s.pid)], { stdio: 'ignore' });
  execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  return true;
}

/** Commands sent by the library clients of this process (see countCommands). */
export const sent = { commands: 0 };

/**
 * Counts every command any ioredis client of this process sends, pipelined
 * or not (a pipeline hands each command to sendCommand too). Redis' own
 * counters can't tell a script's inner commands from commands sent, so the
 * bench counts on the client side. Clients the bench uses for itself are
 * marked `benchInternal` and not counted.
 */
export function countCommands() {
  const original = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, ...rest) {
    if (!this.benchInternal) sent.commands++;
    return original.call(this, command, ...rest);
  };
}

/** A client the bench uses for itself (not counted). */
export function internalClient(url) {
  const client = new Redis(url, { maxRetriesPerRequest: 0 });
  client.benchInternal = true;
  return client;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function median(values) {
  const list = values.filter((v) => v !== undefined && !Number.isNaN(v));
  if (!list.length) return undefined;
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(sorted, p) {
  if (!sorted.length) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** CPU time (user + system) in microseconds since `since`. */
export function cpuSince(since) {
  const d = process.cpuUsage(since);
  return d.user + d.system;
}

/** The command line's `--name=value` (the value may hold `=`) and `--flag` options, by name (a flag is `true`). */
export function parseFlags(argv = process.argv.slice(2)) {
  return Object.fromEntries(
    argv.map((a) => {
      const [k, ...v] = a.replace(/^--/, '').split('=');
      return [k, v.length ? v.join('=') : true];
    }),
  );
}
