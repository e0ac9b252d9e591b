import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as RedisNodes from '../../scripts/redis-nodes.mjs';

/** Redis masters for the demo and how to let them go. */
export interface DemoRedis {
  urls: string[];
  /** Stops servers the demo started (nothing for REDIS_URLS). */
  stop(): Promise<void>;
  /** Human description for the header line. */
  label: string;
}

/**
 * `REDIS_URLS` when set; otherwise five fresh `redis-server` processes on
 * free loopback ports (installing Redis first when missing and possible,
 * exactly as `npm test` does).
 */
export async function demoRedis(root: string): Promise<DemoRedis> {
  const given = process.env.REDIS_URLS?.split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  if (given?.length)
    return {
      urls: given,
      stop: () => Promise.resolve(),
      label: `${given.length} existing Redis node(s) from REDIS_URLS`,
    };

  const ensure = spawnSync(
    process.execPath,
    [join(root, 'scripts/ensure-redis.mjs')],
    { stdio: 'inherit' },
  );
  if (ensure.status !== 0) throw new Error('redis-server is not available');
  const nodes = (await import(
    pathToFileURL(join(root, 'scripts/redis-nodes.mjs')).href
  )) as typeof RedisNodes;
  const servers = await nodes.startServers(5);
  return {
    urls: servers.map((s) => s.url),
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()));
    },
    label: `5 local redis-server processes (ports ${servers.map((s) => s.port).join(', ')})`,
  };
}
