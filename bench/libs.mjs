// One adapter per library with the same small surface, so every scenario runs
// the same code for each: acquire(key) waits up to `wait` ms (0: one
// attempt) and throws when it gives up; release(handle); hold(key, until)
// keeps a lock with the library's own watchdog until `until` resolves.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import NodeRedlock from 'redlock';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { Mutex, RedlockMutex } from 'redis-semaphore';
import { createLock, createRedlock, IoredisAdapter } from 'redlock-universal';
import { resolve } from 'node:path';
import * as ours from '../dist/esm/index.js';
import { sleep } from './util.mjs';

export const OURS = 'nestjs-redlock';
/** Ours through `LockService` with per-call options (bench/user-path.mjs only). */
export const SERVICE = 'nestjs-redlock LockService';
export const FLOOR = 'raw ioredis';
export const PEERS = ['redlock', '@sesamecare-oss/redlock', 'redis-semaphore', 'redlock-universal'];
/**
 * BENCH_BASELINE=<checkout with a build>: adds that build of this library as
 * 'baseline', run interleaved with the others, to measure one change (A/B).
 * It is not a peer: the ratios ignore it.
 */
export const BASELINE = 'baseline';
/** `LockService` of the BENCH_BASELINE build (bench/user-path.mjs only), for an A/B of the Nest path. */
export const SERVICE_BASELINE = 'baseline-service';
const baseline = process.env.BENCH_BASELINE
  ? await import(resolve(process.env.BENCH_BASELINE, 'dist/esm/index.js'))
  : undefined;
export const ALL = [OURS, ...(baseline ? [BASELINE] : []), FLOOR, ...PEERS];

/** Peers poll every 10 ms in contention (their most aggressive sensible setting). */
const POLL = 10;

async function clientsFor(urls) {
  const clients = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 0 }));
  for (const c of clients) c.on('error', () => undefined);
  await Promise.all(clients.map((c) => c.ping()));
  return clients;
}

async function closeClients(clients) {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}

/**
 * @param {string} name one of ALL
 * @param {string[]} urls the lock nodes
 * @param {{ ttl: number, wait: number }} opts
 */
/**
 * BENCH_SUBSCRIBE=1: a no-op subscriber on every lock event channel, to
 * measure what observing costs (the events are built and published).
 */
if (process.env.BENCH_SUBSCRIBE) {
  const { subscribe, tracingChannel } = await import('node:diagnostics_channel');
  const noop = () => undefined;
  for (const [event, name] of Object.entries(ours.REDLOCK_CHANNELS)) {
    if (['acquire', 'extend', 'release', 'fence'].includes(event))
      tracingChannel(name).subscribe({ start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop });
    else subscribe(name, noop);
  }
}

export async function createLib(name, urls, { ttl, wait }) {
  const quorum = Math.floor(urls.length / 2) + 1;
  switch (name) {
    case OURS:
    case BASELINE: {
      const { Redlock, JitteredRetry } = name === OURS ? ours : baseline;
      // Default settings: only the lease and the wait budget are set.
      // BENCH_OURS (JSON) overrides options, for experiments only.
      const redlock = new Redlock({
        clients: urls,
        ttl,
        waitTimeout: wait,
        ...(process.env.BENCH_OURS_POLL ? { waitStrategy: new JitteredRetry() } : {}),
        ...JSON.parse(process.env.BENCH_OURS ?? '{}'),
      });
      await Promise.all(redlock.nodes.map((n) => n.client.ping()));
      return {
        acquire: (key) => redlock.acquire(key),
        release: (lock) => lock.release(),
        hold: async (key, until, acquired) => {
          let lost = false;
          await redlock.using(key, async (lock) => {
            acquired();
            await until;
            lost = lock.signal.aborted;
          }, { onLockLost: 'ignore' });
          return { lost };
        },
        close: () => redlock.quit(),
      };
    }
    case FLOOR: {
      const clients = await clientsFor(urls);
      for (const c of clients) {
        c.defineCommand('cad', {
          numberOfKeys: 1,
          lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
        });
      }
      const drift = ttl * 0.01 + 2;
      const acquire = async (key) => {
        const value = randomBytes(16).toString('hex');
        const giveUp = performance.now() + wait;
        for (;;) {
          const start = performance.now();
          const replies = await Promise.allSettled(clients.map((c) => c.set(key, value, 'PX', ttl, 'NX')));
          const granted = replies.filter((r) => r.status === 'fulfilled' && r.value === 'OK').length;
          if (granted >= quorum && ttl - (performance.now() - start) - drift > 0) return { key, value };
          const maybe = clients.filter((_, i) => replies[i].status !== 'fulfilled' || replies[i].value === 'OK');
          if (maybe.length) await Promise.allSettled(maybe.map((c) => c.cad(key, value)));
          if (performance.now() >= giveUp) throw new Error(`floor: ${key} busy`);
          await sleep(POLL);
        }
      };
      return {
        acquire,
        release: ({ key, value }) => Promise.allSettled(clients.map((c) => c.cad(key, value))),
        hold: null, // the floor has no watchdog
        close: () => closeClients(clients),
      };
    }
    case 'redlock':
    case '@sesamecare-oss/redlock': {
      const clients = await clientsFor(urls);
      const Cls = name === 'redlock' ? NodeRedlock : SesameRedlock;
      const redlock = new Cls(clients, {
        retryCount: wait > 0 ? Math.ceil(wait / POLL) : 0,
        retryDelay: POLL,
        retryJitter: POLL / 2,
      });
      redlock.on('error', () => undefined);
      return {
        acquire: (key) => redlock.acquire([key], ttl),
        release: (lock) => lock.release(),
        hold: async (key, until, acquired) => {
          let lost = false;
          await redlock.using([key], ttl, async (signal) => {
            acquired();
            await until;
            lost = signal.aborted;
          });
          return { lost };
        },
        close: () => closeClients(clients),
      };
    }
    case 'redis-semaphore': {
      const clients = await clientsFor(urls);
      const make = (key, onLockLost) => {
        const options = { lockTimeout: ttl, acquireTimeout: wait > 0 ? wait : 1000, retryInterval: POLL, onLockLost };
        if (wait === 0) options.acquireAttemptsLimit = 1;
        return clients.length === 1 ? new Mutex(clients[0], key, options) : new RedlockMutex(clients, key, options);
      };
      return {
        acquire: async (key) => {
          const mutex = make(key);
          await mutex.acquire();
          return mutex;
        },
        release: (mutex) => mutex.release(),
        hold: async (key, until, acquired) => {
          let lost = false;
          const mutex = make(key, () => {
            lost = true;
          });
          await mutex.acquire();
          acquired();
          await until;
          await mutex.release();
          return { lost };
        },
        close: () => closeClients(clients),
      };
    }
    case 'redlock-universal': {
      const clients = await clientsFor(urls);
      const adapters = clients.map((c) => new IoredisAdapter(c));
      const retryAttempts = wait > 0 ? Math.ceil(wait / POLL) : 0;
      const make = (key) =>
        adapters.length === 1
          ? createLock({ adapter: adapters[0], key, ttl, retryAttempts, retryDelay: POLL })
          : createRedlock({ adapters, key, ttl, retryAttempts, retryDelay: POLL });
      return {
        acquire: async (key) => {
          const lock = make(key);
          return { lock, handle: await lock.acquire() };
        },
        release: ({ lock, handle }) => lock.release(handle),
        hold: async (key, until, acquired) => {
          let lost = false;
          await make(key).using(async (signal) => {
            acquired();
            await until;
            lost = signal.aborted;
          });
          return { lost };
        },
        close: () => closeClients(clients),
      };
    }
    default:
      throw new Error(`unknown library ${name}`);
  }
}
