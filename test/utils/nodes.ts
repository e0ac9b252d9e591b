import { randomBytes } from 'node:crypto';
import { Redis, type Command } from 'ioredis';
import type { Redlock } from 'nestjs-redlock';

/**
 * REDLOCK_TEST_PROTOCOL=2|3 (scripts/redis-nodes.mjs): loading that module
 * makes it ioredis's default `protocol`, so every client of a spec that
 * imports this file speaks it: the library's, made from the URLs below, and
 * the spec's own (`inspect`). Undefined: ioredis's default (RESP3 in 6).
 */
export { TEST_PROTOCOL } from '../../scripts/redis-nodes.mjs';

/** URL of the shared single-node server started by global-setup. */
export function singleUrl(): string {
  const url = process.env.REDIS_SINGLE_URL;
  if (!url)
    throw new Error(
      'REDIS_SINGLE_URL is not set: run tests with `npm test` (jest global setup starts Redis)',
    );
  return url;
}

/** URLs of the five shared quorum servers started by global-setup. */
export function quorumUrls(): string[] {
  const urls = process.env.REDIS_QUORUM_URLS;
  if (!urls)
    throw new Error(
      'REDIS_QUORUM_URLS is not set: run tests with `npm test` (jest global setup starts Redis)',
    );
  return urls.split(',');
}

/** A key prefix unique to one test, so tests sharing servers never meet. */
export function uniquePrefix(label = 't'): string {
  return `${label}:${randomBytes(6).toString('hex')}:`;
}

/** Plain clients for inspecting nodes from a test (close them with `closeAll`). */
export function inspect(urls: string[]): Redis[] {
  return urls.map((url) => new Redis(url, { maxRetriesPerRequest: 0 }));
}

export async function closeAll(clients: Redis[]): Promise<void> {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}

/** Lua script calls (EVALSHA and EVAL) the nodes have run since they started. */
export async function scriptCalls(clients: Redis[]): Promise<number> {
  let calls = 0;
  for (const client of clients) {
    const info = await client.info('commandstats');
    calls += Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
    calls += Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
  }
  return calls;
}

/**
 * Calls `seen` with each command `client` sends from now on, once per
 * command (ioredis passes a command queued before the connection was ready
 * through `sendCommand` again when it flushes its offline queue), before it
 * leaves. The library builds its script commands itself and hands them to
 * `sendCommand`, so this sees them where spying on `evalsha` would not.
 * Returns the function that stops watching.
 */
export function watchCommands(
  client: Redis,
  seen: (command: Command) => void,
): () => void {
  const send = client.sendCommand.bind(client);
  const watched = new WeakSet<Command>();
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    if (!watched.has(command)) {
      watched.add(command);
      seen(command);
    }
    return send(command, ...(rest as []));
  };
  return () => {
    client.sendCommand = send;
  };
}

/**
 * Resolves once every command `redlock` sent before the call has run on its
 * nodes: a release settles when a quorum answered, and the others' deletes
 * may still be on the way. A PING on each of its own connections returns
 * after everything sent before it on that connection. The release of a
 * lock that was waited for may be held back until the event loop turns
 * (`ReleaseResult.deferred`): one turn passes first, and one after the
 * replies, for what they set in motion (a release passing the local turn on).
 * Twice: a script a node did not know (NOSCRIPT) is sent again with its
 * source when that answer comes, after the first PING was sent.
 */
export async function flushed(redlock: Redlock): Promise<void> {
  for (let round = 0; round < 2; round++) {
    await nextTurn();
    await Promise.all(redlock.nodes.map((n) => n.client.ping().catch(() => 0)));
  }
  await nextTurn();
}

/** Resolves when the event loop has turned (after pending I/O and microtasks). */
export const nextTurn = () =>
  new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Wait options whose fallback retry is 5 s away: within a test, only a
 * release message (or a reconnect) can move such a waiter sooner.
 */
export const SLOW_RETRY = {
  retryDelay: 5000,
  retryJitter: 0,
  waitTimeout: 8000,
} as const;

/**
 * Makes `waiter` wait once for a lock `holder` holds, so that it listens
 * for release messages from then on (an instance opens its subscriber
 * connections on its first wait and keeps them for its life).
 */
export async function startListening(
  holder: Redlock,
  waiter: Redlock,
): Promise<void> {
  const held = await holder.acquire('warm', { ttl: 5000 });
  await flushed(holder);
  const waiting = waiter.acquire('warm', SLOW_RETRY);
  await new Promise((r) => setTimeout(r, 100));
  await held.release();
  const lock = await waiting;
  await lock.release();
  if (!lock.waited) throw new Error('startListening: the waiter never waited');
}

/**
 * Resolves once `redlock` has made `n` more waits than `before` (its
 * `stats.retries`): its waiter is parked. Gives up after 10 s, and the
 * caller's assertion on the count then fails.
 */
export async function parked(
  redlock: Redlock,
  before: number,
  n = 1,
): Promise<number> {
  const until = performance.now() + 10_000;
  while (redlock.stats.retries < before + n && performance.now() < until)
    await new Promise((resolve) => setTimeout(resolve, 2));
  return redlock.stats.retries;
}

/**
 * What `read` returns once it equals `expected`, or after `withinMs`
 * (the last read, for the assertion to show): every node answers a lock's
 * request, but one whose script cache was empty (NOSCRIPT) runs it a round
 * trip later than the others, after a PING sent in between (`flushed`).
 */
export async function settledTo<T>(
  read: () => Promise<T>,
  expected: T,
  withinMs = 2000,
): Promise<T> {
  const until = performance.now() + withinMs;
  for (;;) {
    const value = await read();
    if (JSON.stringify(value) === JSON.stringify(expected)) return value;
    if (performance.now() >= until) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
