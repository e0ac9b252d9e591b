import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVERS_DIE_WITH_PARENT } from '../../scripts/redis-nodes.mjs';

/**
 * The Redis servers that the tests, the demo and `npm run bench` start
 * (scripts/redis-nodes.mjs) must not outlive the process that started them
 * when it dies without stopping them: a benchmark whose output pipe
 * closed, or a test worker killed by jest, used to leave its servers
 * running for good.
 */
// Only where setpriv exists (Linux, with util-linux); elsewhere servers are
// started plainly and the test run's global guard stops its own.
(SERVERS_DIE_WITH_PARENT ? it : it.skip)(
  'a server is killed when the process that started it is killed',
  async () => {
    const script = `
      import(${JSON.stringify(join(process.cwd(), 'scripts/redis-nodes.mjs'))})
        .then(({ RedisServer }) => RedisServer.start())
        .then((server) => { console.log(server.pid, server.dir); setInterval(() => {}, 1000); });
    `;
    const parent = spawn(process.execPath, ['-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [chunk] = (await once(parent.stdout, 'data')) as [Buffer];
    const [pid, dir] = chunk.toString().trim().split(' ');
    const serverPid = Number(pid);
    expect(serverPid).toBeGreaterThan(0);
    expect(alive(serverPid)).toBe(true);

    try {
      parent.kill('SIGKILL');
      await once(parent, 'exit');
      const deadline = Date.now() + 5000;
      while (alive(serverPid) && Date.now() < deadline) await sleep(20);
      expect(alive(serverPid)).toBe(false);
    } finally {
      // Only if the test failed: stop the server this test started.
      if (alive(serverPid)) process.kill(serverPid, 'SIGKILL');
      // The killed process could not remove its server's directory.
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

/** Whether a process with that pid exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed server whose parent is gone is reaped by init, but may be seen
  // as a zombie for a moment: that is dead.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}
