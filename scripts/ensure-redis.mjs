// Makes sure `redis-server` is on PATH before tests, the demo or the bench
// start real Redis nodes. Where it is missing and this is a root shell with
// apt-get (as in CI), installs Debian's redis-server package; elsewhere stops
// with one message saying how to install it. With REDLOCK_SERVER (another
// server binary) set, only checks that it runs.
import { execFileSync, spawnSync } from 'node:child_process';

const has = (cmd) =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status ===
  0;

if (process.env.REDLOCK_SERVER) {
  // Another server binary (scripts/ensure-servers.mjs): it must run.
  const run = spawnSync(process.env.REDLOCK_SERVER, ['--version'], {
    stdio: 'ignore',
  });
  if (run.status !== 0) {
    console.error(
      `REDLOCK_SERVER=${process.env.REDLOCK_SERVER} does not run` +
        (run.error ? `: ${run.error.message}` : ''),
    );
    process.exit(1);
  }
} else if (!has('redis-server')) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && has('apt-get')) {
    console.log(
      'redis-server not found: installing the redis-server package with apt-get',
    );
    const quiet = {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    };
    try {
      execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], quiet);
    } catch {
      execFileSync('apt-get', ['update', '-qq'], quiet);
      execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], quiet);
    }
    // The package starts a system service on 6379; the tests never use it.
  } else {
    console.error(
      'redis-server is not installed. Install Redis 6.2+ (or Valkey) first: ' +
        '`sudo apt-get install redis-server` (Debian/Ubuntu), `brew install redis` (macOS), ' +
        'or set REDIS_URLS for the demo.',
    );
    process.exit(1);
  }
}
