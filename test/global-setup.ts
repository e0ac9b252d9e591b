import { spawn } from 'node:child_process';
import {
  SERVERS_DIE_WITH_PARENT,
  startServers,
  type RedisServer,
} from '../scripts/redis-nodes.mjs';

declare global {
  var __REDLOCK_TEST_SERVERS__: RedisServer[] | undefined;
}

/**
 * Starts the shared Redis nodes for the whole run: one for single-node tests
 * and five for quorum tests, on free loopback ports, persistence off. Tests
 * isolate themselves with a random key prefix; tests that stop or freeze
 * nodes start their own servers. The URLs reach the workers through env.
 */
export default async function globalSetup(): Promise<void> {
  const servers = await startServers(6);
  globalThis.__REDLOCK_TEST_SERVERS__ = servers;
  process.env.REDIS_SINGLE_URL = servers[0].url;
  process.env.REDIS_QUORUM_URLS = servers
    .slice(1)
    .map((s) => s.url)
    .join(',');
  // If jest itself is killed, globalTeardown never runs. Where the kernel
  // does not kill the servers with this process (no setpriv), a detached
  // guard stops them (by pid) once it is gone.
  if (SERVERS_DIE_WITH_PARENT) return;
  const pids = servers.map((s) => s.pid).join(' ');
  spawn(
    'sh',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${pids} 2>/dev/null`,
    ],
    {
      detached: true,
      stdio: 'ignore',
    },
  ).unref();
}
