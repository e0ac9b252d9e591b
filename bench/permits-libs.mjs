// Adapters for the semaphore and read/write benches (bench/semaphore.mjs,
// bench/rwlock.mjs), one small surface per library as in libs.mjs:
// acquire(key, role) waits up to `wait` ms and throws when it gives up;
// release(handle). Roles: 'permit' (one of `permits` permits of `key`),
// 'read' and 'write' (a read/write lock on `key`), 'mutex' (an exclusive
// lock of `key`). A library throws on a role it lacks.
import { Mutex, RedlockMutex, RedlockSemaphore, Semaphore } from 'redis-semaphore';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import * as ours from '../dist/esm/index.js';

export const OURS = 'nestjs-redlock';
export const PEER = 'redis-semaphore';
/** BENCH_BASELINE=<checkout, built>: that build of this library as 'baseline' (its roles must exist there). */
export const BASELINE = 'baseline';
/** No lock at all: the ceiling of a scenario (every acquire granted at once). */
export const NONE = 'no lock';
const baseline = process.env.BENCH_BASELINE
  ? await import(resolve(process.env.BENCH_BASELINE, 'dist/esm/index.js'))
  : undefined;
export const HAS_BASELINE = Boolean(baseline);

/** The peer polls every 10 ms when refused, as in bench/libs.mjs (its most aggressive sensible setting). */
const POLL = 10;

/**
 * @param {string} name OURS, BASELINE, PEER or NONE
 * @param {string[]} urls the lock nodes
 * @param {{ ttl: number, wait: number, permits?: number }} opts
 */
export async function createPermitLib(name, urls, { ttl, wait, permits }) {
  switch (name) {
    case OURS:
    case BASELINE: {
      const { Redlock } = name === OURS ? ours : baseline;
      // Default settings: only the lease and the wait budget are set.
      // BENCH_OURS (JSON) overrides options, for experiments only;
      // BENCH_BASELINE_OURS those of the baseline alone (the same build
      // with other options: BENCH_BASELINE=<this checkout>).
      const overrides = (name === BASELINE && process.env.BENCH_BASELINE_OURS) || process.env.BENCH_OURS || '{}';
      const redlock = new Redlock({ clients: urls, ttl, waitTimeout: wait, ...JSON.parse(overrides) });
      await Promise.all(redlock.nodes.map((n) => n.client.ping()));
      const options = { permit: { permits }, read: { mode: 'read' }, write: { mode: 'write' }, mutex: undefined };
      return {
        acquire: (key, role) => redlock.acquire(key, options[role]),
        release: (lock) => lock.release(),
        close: () => redlock.quit(),
        stats: () => ({ ...redlock.stats }),
      };
    }
    case PEER: {
      const clients = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 0 }));
      for (const c of clients) c.on('error', () => undefined);
      await Promise.all(clients.map((c) => c.ping()));
      const options = { lockTimeout: ttl, acquireTimeout: wait > 0 ? wait : 1000, retryInterval: POLL };
      if (wait === 0) options.acquireAttemptsLimit = 1;
      const one = clients.length === 1;
      const make = {
        // Semaphore: one sorted set on the node; RedlockSemaphore: one per node, held on a quorum.
        permit: (key) => (one ? new Semaphore(clients[0], key, permits, options) : new RedlockSemaphore(clients, key, permits, options)),
        mutex: (key) => (one ? new Mutex(clients[0], key, options) : new RedlockMutex(clients, key, options)),
      };
      return {
        acquire: async (key, role) => {
          if (!make[role]) throw new Error(`${PEER} has no ${role} lock`);
          const lock = make[role](key);
          await lock.acquire();
          return lock;
        },
        release: (lock) => lock.release(),
        close: () => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect()))),
        stats: () => ({}),
      };
    }
    case NONE:
      return {
        acquire: async () => null,
        release: async () => undefined,
        close: async () => undefined,
        stats: () => ({}),
      };
    default:
      throw new Error(`unknown library ${name}`);
  }
}
