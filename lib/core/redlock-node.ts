import { Redis, type RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../errors/redlock-config.error.js';
import {
  isNoScriptError,
  runScript,
  type LuaScript,
} from './scripts/lua-script.js';
import { show } from './timing.js';

/**
 * For clients the library owns: `closeClient` drops a connection only once
 * it is done with it (QUIT unanswered, or not connected), so ioredis's 2 s
 * grace before it destroys the socket would only keep the process alive.
 * For a client reconnecting to a node that is down, that timer even waits
 * on a socket closed already (ioredis #1247), and held an app's exit after
 * `quit()` for 2 s.
 */
export const DROP_AT_ONCE: RedisOptions = { disconnectTimeout: 0 };

/**
 * Options the library applies to the clients it creates (a user's own
 * options win). `maxRetriesPerRequest: 0` fails queued commands at the first
 * failed reconnect instead of piling them up while a node is down: a lock
 * request that arrives late is worth nothing, and the per-node timeout has
 * already counted it as failed.
 */
const OWNED_CLIENT_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 0,
  lazyConnect: true,
  ...DROP_AT_ONCE,
};

/**
 * One Redis master as the algorithm sees it: a client, a printable name
 * (`host:port`, never credentials) and whether the library owns the client.
 */
export class RedlockNode {
  constructor(
    readonly client: Redis,
    readonly name: string,
    /** True when the library created the client and so must close it. */
    readonly owned: boolean,
  ) {}

  /**
   * When this node last answered a request of a poll, successfully or with
   * an error reply, as a number from `answerSequence` (later answers of any
   * node have higher numbers): a node that answers is alive, even when a
   * burst keeps it busy past the node timeout (see `poll`). A counter rather
   * than a clock reading, as it is written for every answer of every node.
   */
  lastAnswer = 0;

  /** Writes of this tick: the first sent, or the socket corked for the rest. */
  private tick?: 'first' | Redis['stream'];

  /**
   * Runs a script by SHA, sending its source only if the node answers
   * NOSCRIPT. Requests to this node made in the same tick (many callers
   * acquiring or releasing at once) leave in one socket write.
   */
  run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    this.coalesceWrites();
    return runScript(this.client, script, keys, args);
  }

  /**
   * Batches the requests of one tick to this node into one socket write.
   * ioredis writes each command as it is called, one system call each;
   * concurrent lock requests (64 workers, a batch of locks) would pay one
   * per request. The first request of a tick leaves at once (a lone
   * request, the sequential case, must not wait); a second one in the same
   * tick corks the socket, so it and all that follow leave together at
   * `nextTick`. ioredis's own auto-pipelining batches too, but holds every
   * command until the next event-loop turn (setImmediate), which made
   * sequential acquires about 15 % slower; corking every write made them
   * about 25 % slower, and corking whenever commands were in flight sent
   * half the writes of a sequential run (which starts its next request
   * before the slowest nodes answered) through the slower `writev`.
   */
  private coalesceWrites(): void {
    if (this.tick === undefined) {
      this.tick = 'first';
      endOfTick.push(this);
      if (endOfTick.length === 1) process.nextTick(flushTick);
      return;
    }
    if (this.tick !== 'first') return;
    const stream = this.client.stream;
    if (this.client.status !== 'ready' || !stream?.writable) return;
    stream.cork();
    this.tick = stream;
  }

  /** @internal Ends this node's tick: sends what was corked. */
  endTick(): void {
    if (this.tick !== 'first') this.tick?.uncork();
    this.tick = undefined;
  }

  /**
   * Runs a script once per call, all calls in one pipeline (one write, one
   * round trip). Calls answered NOSCRIPT go again by SHA in a second
   * pipeline that loads the source first: the source crosses once, not
   * once per call (a watchdog tick with thousands of locks makes several).
   * Resolves with each call's reply, or its error.
   */
  async runPipeline(
    script: LuaScript,
    calls: readonly {
      keys: readonly string[];
      args: readonly (string | number)[];
    }[],
  ): Promise<unknown[]> {
    const pipeline = this.client.pipeline();
    for (const { keys, args } of calls)
      pipeline.evalsha(script.sha, keys.length, ...keys, ...args);
    const results = (await pipeline.exec()) ?? [];
    const missing = results
      .map(([error], i) => (isNoScriptError(error) ? i : -1))
      .filter((i) => i >= 0);
    if (missing.length) {
      // A pipeline runs in order on one connection: loaded before use.
      const again = this.client.pipeline().script('LOAD', script.source);
      for (const i of missing) {
        const { keys, args } = calls[i];
        again.evalsha(script.sha, keys.length, ...keys, ...args);
      }
      const [load, ...retried] = (await again.exec()) ?? [];
      // A load that failed says more than the NOSCRIPT that follows it.
      missing.forEach((i, j) => (results[i] = load?.[0] ? load : retried[j]));
    }
    return results.map(([error, reply]) => error ?? reply);
  }

  /** Closes the client if the library owns it; borrowed clients are left to their owner. */
  async close(): Promise<void> {
    if (this.owned) await closeClient(this.client);
  }
}

/** How long a node may take to answer QUIT before its connection is dropped. */
export const QUIT_TIMEOUT_MS = 1000;

/**
 * Says QUIT, or drops the connection: at once when the client is not
 * connected (one connecting or reconnecting to a dead node would hold the
 * process open waiting), or after `QUIT_TIMEOUT_MS` without an answer (a
 * frozen or unreachable node keeps a connection `ready` for minutes).
 * Resolves once the socket is closed (ioredis's `end`), not when QUIT is
 * answered: an app that awaited `quit()` (or `app.close()`) then has no
 * socket of ours left open, and a test runner's open-handle check finds
 * none. That wait is bounded by `QUIT_TIMEOUT_MS` too.
 */
export async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  let timer: NodeJS.Timeout | undefined;
  const expire = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), QUIT_TIMEOUT_MS);
  });
  const ended = new Promise<true>((resolve) =>
    client.once('end', () => resolve(true)),
  );
  try {
    if (client.status === 'ready') {
      const answered = await Promise.race([
        client.quit().then(
          () => true,
          () => false,
        ),
        expire,
      ]);
      if (!answered) client.disconnect();
    } else {
      client.disconnect();
    }
    // A client waiting to reconnect has no socket left and never says
    // 'end' after disconnect(): nothing to wait for.
    if (!client.stream || client.stream.destroyed) return;
    if (!(await Promise.race([ended, expire]))) client.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Turns the configured clients into nodes, rejecting an empty list and the
 * same node listed twice. Clients created here are owned (closed by
 * `closeNodes`) and not connected yet (see `connectOwned`).
 */
export function createNodes(configs: unknown): RedlockNode[] {
  if (!Array.isArray(configs) || configs.length === 0) {
    throw new RedlockConfigError(
      'clients',
      `must list at least one Redis node, got ${show(configs)}`,
    );
  }
  const nodes = configs.map((config: unknown, i) => toNode(config, i));
  const seen = new Map<string, number>();
  const instances = new Map<Redis, number>();
  nodes.forEach((node, i) => {
    const identity = nodeIdentity(node.client);
    const twice = instances.get(node.client) ?? seen.get(identity);
    if (twice !== undefined) {
      void closeNodes(nodes);
      throw new RedlockConfigError(
        `clients[${i}]`,
        `is the same Redis node as clients[${twice}] (${node.name}); Redlock needs N independent masters`,
      );
    }
    seen.set(identity, i);
    instances.set(node.client, i);
  });
  return nodes;
}

/**
 * Starts connecting the clients the library owns that never connected
 * (created with ioredis's `lazyConnect`). A failed connection is left to
 * the client's own retries; nothing waits here.
 */
export function connectOwned(nodes: readonly RedlockNode[]): void {
  for (const node of nodes) {
    if (node.owned && node.client.status === 'wait')
      node.client.connect().catch(() => undefined);
  }
}

/** Nodes that sent a request this tick (one `nextTick` ends the tick for all). */
const endOfTick: RedlockNode[] = [];
function flushTick(): void {
  for (const node of endOfTick.splice(0)) node.endTick();
}

/** Closes the clients the library owns, in parallel. */
export async function closeNodes(nodes: readonly RedlockNode[]): Promise<void> {
  await Promise.all(nodes.map((node) => node.close()));
}

function toNode(config: unknown, i: number): RedlockNode {
  // A Cluster client looks like a client (evalsha, options), and would
  // only fail at the first lock, inside the scripts.
  if ((config as { isCluster?: unknown } | null)?.isCluster === true) {
    throw new RedlockConfigError(
      `clients[${i}]`,
      'is a Redis Cluster client, which is not supported as a node (the scripts reach keys of other slots): pass one client per independent Redis server',
    );
  }
  if (config instanceof Redis || isRedisLike(config)) {
    return new RedlockNode(config as Redis, nodeName(config as Redis), false);
  }
  let client: Redis;
  if (typeof config === 'string') {
    if (!/^rediss?:\/\//.test(config)) {
      throw new RedlockConfigError(
        `clients[${i}]`,
        `must be a redis:// or rediss:// URL, got ${show(redact(config))}`,
      );
    }
    client = new Redis(config, OWNED_CLIENT_DEFAULTS);
  } else if (
    typeof config === 'object' &&
    config !== null &&
    !Array.isArray(config)
  ) {
    client = new Redis({
      ...OWNED_CLIENT_DEFAULTS,
      ...(config as RedisOptions),
    });
  } else {
    throw new RedlockConfigError(
      `clients[${i}]`,
      `must be an ioredis client, a redis:// URL or RedisOptions, got ${show(config)}`,
    );
  }
  // ioredis prints unhandled 'error' events; a node being down is expected
  // and already reported per request, so keep the console quiet.
  client.on('error', () => undefined);
  return new RedlockNode(client, nodeName(client), true);
}

/** An ioredis client from another copy of ioredis (duck-typed). */
function isRedisLike(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Redis).evalsha === 'function' &&
    typeof (value as Redis).options === 'object'
  );
}

/** `host:port` (or the unix socket path, or the sentinel master name): never credentials. */
export function nodeName(client: Redis): string {
  const o = client.options;
  if (o.connectionName) return o.connectionName;
  if (o.sentinels?.length) return `sentinel:${o.name ?? 'mymaster'}`;
  if (o.path) return o.path;
  return `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
}

function nodeIdentity(client: Redis): string {
  const o = client.options;
  const where = o.sentinels?.length
    ? `sentinel:${o.name}:${o.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`
    : (o.path ?? `${o.host ?? 'localhost'}:${o.port ?? 6379}`);
  return `${where}/${o.db ?? 0}`;
}

function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}
