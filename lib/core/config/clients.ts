/**
 * A Redis Cluster among the configured `clients`: an ioredis `Cluster`, or
 * a `RedisClusterConfig` (`{ cluster: seeds }`).
 */
export function isClusterConfig(config: unknown): boolean {
  if (typeof config !== 'object' || config === null) return false;
  return (
    (config as { isCluster?: unknown }).isCluster === true ||
    Array.isArray((config as { cluster?: unknown }).cluster)
  );
}
