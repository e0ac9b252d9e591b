import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A free TCP port on loopback, found by binding port 0. */
/** @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (
        server.address()
      );
      server.close(() => resolve(port));
    });
  });
}

/**
 * How servers are started: through util-linux's `setpriv --pdeathsig KILL`
 * where it exists (Linux), so the kernel kills a server when the process
 * that started it dies without stopping it (a benchmark whose output pipe
 * closed, a test worker killed by jest, Ctrl-C). `setpriv` execs
 * redis-server in place: the pid stays the server's. Elsewhere, a plain
 * spawn (the test run's global setup then starts a guard for its shared
 * servers).
 */
export const SERVERS_DIE_WITH_PARENT = !spawnSync('setpriv', ['--help'], {
  stdio: 'ignore',
}).error;
/**
 * The server binary: REDLOCK_SERVER, the path of another redis-server or a
 * valkey-server (scripts/ensure-servers.mjs builds Redis 8.0 and Valkey 8.1),
 * else `redis-server` on PATH. Cluster mode uses the same binary.
 */
export const SERVER_BINARY = process.env.REDLOCK_SERVER || 'redis-server';

/**
 * REDLOCK_TEST_PROTOCOL=2|3: the RESP version every ioredis client of this
 * process speaks (its module instance of ioredis: in jest, the test file's),
 * the clients the library creates from URLs and options included, set as
 * ioredis's default `protocol` when this module loads (test/utils/nodes.ts
 * imports it, so every spec on real servers does). ioredis 6 speaks RESP3
 * by default, ioredis 5 only RESP2. A URL's `?protocol=` is no way to set
 * it: ioredis keeps it as a string, and "3" !== 3 makes it RESP2. Unset,
 * nothing changes (undefined: ioredis's own default).
 */
export const TEST_PROTOCOL = testProtocol(process.env.REDLOCK_TEST_PROTOCOL);
if (TEST_PROTOCOL) Redis.defaultOptions.protocol = TEST_PROTOCOL;

/** @param {string | undefined} value @returns {2 | 3 | undefined} */
function testProtocol(value) {
  if (!value) return undefined;
  if (value === '2' || value === '3') return /** @type {2 | 3} */ (+value);
  throw new Error(`REDLOCK_TEST_PROTOCOL must be 2 or 3, got '${value}'`);
}

const SERVER_COMMAND = SERVERS_DIE_WITH_PARENT
  ? ['setpriv', '--pdeathsig', 'KILL', SERVER_BINARY]
  : [SERVER_BINARY];

/**
 * With REDLOCK_SERVER set, says once per run which binary and version the
 * servers are (the env marker is inherited by jest's workers and children).
 */
function announceServer() {
  if (!process.env.REDLOCK_SERVER || process.env.REDLOCK_SERVER_SHOWN) return;
  process.env.REDLOCK_SERVER_SHOWN = '1';
  const run = spawnSync(SERVER_BINARY, ['--version'], { encoding: 'utf8' });
  console.error(
    run.status === 0
      ? `Redis nodes: ${SERVER_BINARY} (${run.stdout.trim()})`
      : `Redis nodes: REDLOCK_SERVER=${SERVER_BINARY} does not run: ${run.error?.message ?? run.stderr}`,
  );
}

// Real redis-server processes on 127.0.0.1 for the tests, the demo and the
// bench. Plain JavaScript so jest's global setup, the demo and the bench can
// all load it without a compile step; types are in redis-nodes.d.mts.

/**
 * One real `redis-server` process on 127.0.0.1, persistence off, that tests
 * can stop, freeze (SIGSTOP), thaw and restart on the same port.
 */
export class RedisServer {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  child;
  dir = mkdtempSync(join(tmpdir(), 'redlock-redis-'));

  /**
   * @param {number} port
   * @param {string[]} [args] extra redis-server arguments (cluster mode:
   *   scripts/redis-clusters.mjs)
   */
  constructor(port, args = []) {
    this.port = port;
    this.args = args;
  }

  /** Starts a server on a free port. */
  static async start() {
    for (let tries = 0; ; tries++) {
      const server = new RedisServer(await freePort());
      try {
        await server.spawn();
        return server;
      } catch (error) {
        server.cleanup();
        if (tries >= 4) throw error;
      }
    }
  }

  get pid() {
    return this.child?.pid;
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Kills the server (SIGKILL: a crash, nothing persisted). */
  async kill() {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    // The child was unref'd after start-up; without a ref nothing keeps the
    // event loop alive while we wait, and Node would quietly exit with 0
    // in the middle of jest's global teardown.
    child.ref();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }

  /** Freezes the process: its sockets stay open but nothing is answered. */
  freeze() {
    this.child?.kill('SIGSTOP');
  }

  thaw() {
    this.child?.kill('SIGCONT');
  }

  /** Starts the server again on the same port, empty. */
  async restart() {
    await this.kill();
    await this.spawn();
  }

  /** Stops the server for good and removes its directory. */
  async stop() {
    await this.kill();
    this.cleanup();
  }

  /** A fresh client (the caller closes it). */
  client() {
    return new Redis(this.port, '127.0.0.1', {
      maxRetriesPerRequest: 0,
      lazyConnect: false,
    });
  }

  spawn() {
    announceServer();
    const [command, ...prefix] = SERVER_COMMAND;
    const child = spawn(
      command,
      [
        ...prefix,
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--enable-debug-command',
        'local',
        '--loglevel',
        'warning',
        ...this.args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    return new Promise((resolve, reject) => {
      let output = '';
      const onData = (chunk) => {
        output += chunk.toString();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(
          new Error(
            `redis-server on ${this.port} exited (${code}): ${output.trim()}`,
          ),
        ),
      );
      const deadline = Date.now() + 10_000;
      const probe = async () => {
        const client = new Redis(this.port, '127.0.0.1', {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        client.on('error', () => undefined);
        try {
          await client.connect();
          await client.ping();
          // quit(), not disconnect(): ioredis's disconnect() arms a 2 s
          // timer to destroy the socket, which kept the test runner
          // alive for 2 s after short runs ("Jest did not exit").
          await client.quit();
          child.removeAllListeners('exit');
          child.stdout.off('data', onData);
          child.stderr.off('data', onData);
          // Past start-up nothing is read from the server: close the pipes
          // and let the child not hold a test worker open (stop() still
          // kills it by pid, and the global guard does if jest dies).
          child.stdout.destroy();
          child.stderr.destroy();
          child.unref();
          resolve();
        } catch {
          // A refused connection with no retry has ended the client already.
          if (client.status !== 'end') client.disconnect();
          if (Date.now() > deadline)
            reject(
              new Error(
                `redis-server on ${this.port} did not start: ${output.trim()}`,
              ),
            );
          else setTimeout(() => void probe(), 20);
        }
      };
      void probe();
    });
  }

  cleanup() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts `count` servers in parallel. */
/** @param {number} count */
export function startServers(count) {
  return Promise.all(Array.from({ length: count }, () => RedisServer.start()));
}

/** Every key on a server matching `pattern`, found with SCAN. */
/** @param {Redis} client @param {string} pattern */
export async function scanKeys(client, pattern) {
  const keys = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(
      cursor,
      'MATCH',
      pattern,
      'COUNT',
      1000,
    );
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}
