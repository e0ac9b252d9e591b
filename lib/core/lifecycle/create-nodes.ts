import { Redis, type RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { redact, show } from '../util/validate.js';
import { createClusterNode } from '../cluster/cluster-config.js';
import { isClusterConfig } from '../config/clients.js';
import { ClusterNode } from '../cluster/cluster-node.js';
import { DROP_AT_ONCE } from '../nodes/close-client.js';
import {
  CONNECT_TIMEOUT_MS,
  RECONNECT_DELAY_MAX_MS,
} from '../nodes/stalled-connection.js';
import { RedlockNode } from '../nodes/redlock-node.js';

/**
 * Options the library applies to the clients it creates (a user's own
 * options win). `maxRetriesPerRequest: 0` fails queued commands at the first
 * failed reconnect instead of piling them up while a node is down: a lock
 * request that arrives late is worth nothing, and the per-node timeout has
 * already counted it as failed.
 *
 * After a silent partition the library drops a stalled connection (see
 * `reconnectIfStalled`), and the new one must get through soon after the
 * heal: a connection attempt gives up after `CONNECT_TIMEOUT_MS` (ioredis:
 * 10 s, over which the kernel's SYN retries spread out to 1, 3 and 7 s)
 * and the next starts at most `RECONNECT_DELAY_MAX_MS` later (ioredis:
 * 2 s), so a SYN leaves at least every 1.5 s while a node is cut off.
 */
const OWNED_CLIENT_DEFAULTS: RedisOptions = {
  maxRetriesPerRequest: 0,
  lazyConnect: true,
  connectTimeout: CONNECT_TIMEOUT_MS,
  retryStrategy: (times: number) =>
    Math.min(times * 50, RECONNECT_DELAY_MAX_MS),
  ...DROP_AT_ONCE,
};

/**
 * Turns the configured clients into nodes, rejecting an empty list and the
 * same node listed twice. Clients created here are owned (closed by
 * `closeNodes`) and not connected yet (see `connectOwned`); instances
 * passed in are owned only with `closeClients`.
 */
export function createNodes(
  configs: unknown,
  closeClients = false,
): RedlockNode[] {
  if (!Array.isArray(configs) || configs.length === 0) {
    throw new RedlockConfigError(
      'clients',
      `must list at least one Redis node, got ${show(configs)}`,
    );
  }
  const nodes = configs.map((config: unknown, i) =>
    toNode(config, i, closeClients),
  );
  const seen = new Map<string, number>();
  const instances = new Map<Redis, number>();
  nodes.forEach((node, i) => {
    const identity =
      node instanceof ClusterNode ? node.name : nodeIdentity(node.client);
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

/** Closes the clients the library owns, in parallel. */
export async function closeNodes(nodes: readonly RedlockNode[]): Promise<void> {
  await Promise.all(nodes.map((node) => node.close()));
}

function toNode(
  config: unknown,
  i: number,
  closeClients: boolean,
): RedlockNode {
  if (isClusterConfig(config))
    return createClusterNode(config, i, closeClients);
  const isClient = config instanceof Redis || isRedisLike(config);
  const keyPrefix = isClient
    ? (config as Redis).options.keyPrefix
    : (config as RedisOptions | null)?.keyPrefix;
  // ioredis would prefix the lock keys and wait queues but not the release
  // channel names, so waiters would never be woken: refuse it outright.
  if (typeof keyPrefix === 'string' && keyPrefix.length > 0)
    throw new RedlockConfigError(
      `clients[${i}]`,
      `has the ioredis keyPrefix ${show(keyPrefix)}: the library's keys and channels would be prefixed unevenly (locks under ${show(keyPrefix + 'lock:')}, release wake-ups lost); pass a client without keyPrefix and set the library's keyPrefix and metaPrefix instead`,
    );
  if (isClient)
    return new RedlockNode(
      config as Redis,
      nodeName(config as Redis),
      closeClients,
    );
  let client: Redis;
  if (typeof config === 'string') {
    if (!/^rediss?:\/\//.test(config)) {
      throw new RedlockConfigError(
        `clients[${i}]`,
        `must be a redis:// or rediss:// URL, got ${show(redact(config))}`,
      );
    }
    try {
      client = new Redis(config, OWNED_CLIENT_DEFAULTS);
    } catch (error) {
      // ioredis parses with WHATWG URL, which throws a bare TypeError.
      throw new RedlockConfigError(
        `clients[${i}]`,
        `is not a valid URL (${(error as Error).message}): ${show(redact(config))}`,
      );
    }
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
  // The node listens to its errors (ioredis would print each as unhandled):
  // a node being down is expected, and reported per request and by health().
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

/**
 * Where a client connects: the database index left out, as two databases
 * of one server are one node (one process, one failure). Two names of one
 * host are told apart only at connection (`SameServerCheck`).
 */
function nodeIdentity(client: Redis): string {
  const o = client.options;
  return o.sentinels?.length
    ? `sentinel:${o.name}:${o.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`
    : (o.path ?? `${o.host ?? 'localhost'}:${o.port ?? 6379}`);
}
