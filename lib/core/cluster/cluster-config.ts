import { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { DROP_AT_ONCE } from '../nodes/close-client.js';
import { redact, show } from '../util/validate.js';
import { ClusterNode } from './cluster-node.js';

/**
 * Options the library applies to the Clusters it creates (a user's own
 * options win), as for single servers (see `OWNED_CLIENT_DEFAULTS`): a
 * request that waits for a reconnection is worth nothing to a lock.
 * Auto-pipelining sends the requests of one tick to a shard in one write,
 * as a single server's node does by itself (see `RedlockNode.run`); one
 * write per request cost each shard twice the CPU per lock
 * (docs/performance.md).
 */
const OWNED_CLUSTER_DEFAULTS: ClusterOptions = {
  lazyConnect: true,
  enableAutoPipelining: true,
  redisOptions: { maxRetriesPerRequest: 0, ...DROP_AT_ONCE },
};

/**
 * The node of a Cluster entry of `clients` (`clients[i]`): an ioredis
 * `Cluster` (borrowed unless `closeClients`), or one the library creates
 * from seed URLs and owns.
 */
export function createClusterNode(
  config: unknown,
  i: number,
  closeClients: boolean,
): ClusterNode {
  const field = `clients[${i}]`;
  if ((config as { isCluster?: unknown }).isCluster === true) {
    const cluster = config as Cluster;
    refusePrefix(field, cluster.options.keyPrefix);
    refusePrefix(field, cluster.options.redisOptions?.keyPrefix);
    return new ClusterNode(cluster, clusterName(cluster), closeClients);
  }
  const { cluster: seeds, options } = config as {
    cluster: unknown[];
    options?: ClusterOptions;
  };
  if (seeds.length === 0)
    throw new RedlockConfigError(
      `${field}.cluster`,
      'must list at least one seed node, got an empty array',
    );
  const startup = seeds.map((seed, j) =>
    parseSeed(`${field}.cluster[${j}]`, seed),
  );
  const credentials = startup[0].credentials;
  refusePrefix(field, options?.keyPrefix);
  refusePrefix(field, options?.redisOptions?.keyPrefix);
  const cluster = new Cluster(
    startup.map((s) => ({ host: s.host, port: s.port })),
    {
      ...OWNED_CLUSTER_DEFAULTS,
      ...options,
      redisOptions: {
        ...OWNED_CLUSTER_DEFAULTS.redisOptions,
        ...credentials,
        ...options?.redisOptions,
      },
    },
  );
  return new ClusterNode(cluster, clusterName(cluster), true);
}

/** `cluster:host:port` of the first seed: never credentials. */
function clusterName(cluster: Cluster): string {
  const seeds = (cluster as unknown as { startupNodes?: unknown[] })
    .startupNodes;
  const first = seeds?.[0] as { host?: string; port?: number } | string;
  const at =
    typeof first === 'object' && first !== null
      ? `${first.host ?? 'localhost'}:${first.port ?? 6379}`
      : String(first ?? '?').replace(/\/\/[^@/]*@/, '//');
  return `cluster:${at}`;
}

/** A seed URL or `{ host, port }`; the URL's user, password and TLS apply to every node. */
function parseSeed(
  field: string,
  seed: unknown,
): { host: string; port: number; credentials: RedisOptions } {
  if (typeof seed === 'object' && seed !== null && !Array.isArray(seed)) {
    const { host, port } = seed as { host?: unknown; port?: unknown };
    if (typeof host === 'string' && Number.isInteger(port))
      return { host, port: port as number, credentials: {} };
  } else if (typeof seed === 'string' && /^rediss?:\/\//.test(seed)) {
    let url: URL | undefined;
    try {
      url = new URL(seed);
    } catch {
      url = undefined;
    }
    if (url)
      return {
        host: url.hostname,
        port: Number(url.port || 6379),
        credentials: {
          ...(url.username
            ? { username: decodeURIComponent(url.username) }
            : {}),
          ...(url.password
            ? { password: decodeURIComponent(url.password) }
            : {}),
          ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
        },
      };
  }
  const shown = typeof seed === 'string' ? redact(seed) : seed;
  throw new RedlockConfigError(
    field,
    `must be a redis:// or rediss:// URL or { host, port }, got ${show(shown)}`,
  );
}

/** An ioredis keyPrefix would prefix keys but not channels (see `createNodes`). */
function refusePrefix(field: string, keyPrefix: unknown): void {
  if (typeof keyPrefix === 'string' && keyPrefix.length > 0)
    throw new RedlockConfigError(
      field,
      `has the ioredis keyPrefix ${show(keyPrefix)}: the library's keys and channels would be prefixed unevenly; pass a Cluster without keyPrefix and set the library's keyPrefix and metaPrefix instead`,
    );
}
