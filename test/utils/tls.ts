import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  freePort,
  SERVER_BINARY,
  SERVERS_DIE_WITH_PARENT,
} from '../../scripts/redis-nodes.mjs';

/** A certificate authority and a server certificate for 127.0.0.1, made for one spec. */
export interface TestCertificates {
  readonly dir: string;
  /** The CA certificate (PEM): what a client must trust. */
  readonly ca: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Removes the directory. */
  remove(): void;
}

const has = (cmd: string) =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status ===
  0;

/**
 * Makes sure `openssl` is on PATH, as scripts/ensure-redis.mjs does for
 * redis-server: in a root shell with apt-get (CI) it installs Debian's
 * package; elsewhere it throws, saying how to install it.
 */
export function ensureOpenssl(): void {
  if (has('openssl')) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !has('apt-get'))
    throw new Error(
      'openssl is not installed (the TLS tests make their certificates with it): `sudo apt-get install openssl`, `brew install openssl`',
    );
  const quiet = {
    stdio: ['ignore', 'ignore', 'inherit'] as ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  };
  try {
    execFileSync('apt-get', ['install', '-y', '-qq', 'openssl'], quiet);
  } catch {
    execFileSync('apt-get', ['update', '-qq'], quiet);
    execFileSync('apt-get', ['install', '-y', '-qq', 'openssl'], quiet);
  }
}

/**
 * A fresh self-signed CA and a server certificate it signed, valid for the
 * IP 127.0.0.1 (a subjectAltName: Node checks the address it connected to
 * against it), in a temporary directory.
 */
export function makeCertificates(): TestCertificates {
  ensureOpenssl();
  const dir = mkdtempSync(join(tmpdir(), 'redlock-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  writeFileSync(file('san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=nestjs-redlock test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-set_serial',
    '1',
    '-days',
    '2',
    '-extfile',
    file('san.cnf'),
    '-out',
    file('server.crt'),
  );
  return {
    dir,
    ca: readFileSync(file('ca.crt'), 'utf8'),
    caFile: file('ca.crt'),
    certFile: file('server.crt'),
    keyFile: file('server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A `redis-server` that only speaks TLS, on 127.0.0.1. */
export interface TlsRedisServer {
  readonly port: number;
  /** `rediss://127.0.0.1:<port>` */
  readonly url: string;
  /** The server binary it runs (see `startTlsServer`). */
  readonly binary: string;
  /** SIGKILL, and waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Thrown by `startTlsServer` when this redis-server was built without TLS
 * (it refuses the `tls-*` directives, or finds no TLS support when it
 * starts): the one case a TLS spec may skip.
 */
export class NoTlsBuildError extends Error {}

/** Server binaries seen to lack TLS in this process. */
const withoutTls = new Set<string>();

/**
 * Starts a redis-server with TLS only (`--port 0`: no plain port), the
 * certificates of `certs`, and no client certificates asked for. Resolves
 * once a client trusting the CA gets a PONG.
 *
 * The binary is the server under test (REDLOCK_SERVER, see
 * scripts/redis-nodes.mjs) when it was built with TLS. The builds of
 * scripts/ensure-servers.mjs (Redis 8.0, Valkey 8.1) are `BUILD_TLS=no`:
 * under them the TLS specs run on the system's `redis-server` on PATH
 * (Debian's 7.0, built with TLS) instead of being skipped, and the server
 * returned names the binary it runs. Only when that one lacks TLS too does
 * this throw `NoTlsBuildError`.
 */
export async function startTlsServer(
  certs: TestCertificates,
): Promise<TlsRedisServer> {
  if (SERVER_BINARY !== 'redis-server' && !withoutTls.has(SERVER_BINARY)) {
    try {
      return await startTlsServerOn(SERVER_BINARY, certs);
    } catch (error) {
      if (!(error instanceof NoTlsBuildError)) throw error;
      withoutTls.add(SERVER_BINARY);
    }
  }
  return startTlsServerOn('redis-server', certs);
}

async function startTlsServerOn(
  binary: string,
  certs: TestCertificates,
): Promise<TlsRedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(certs.dir, 'redis-'));
  const command = SERVERS_DIE_WITH_PARENT
    ? ['setpriv', '--pdeathsig', 'KILL', binary]
    : [binary];
  const child = spawn(
    command[0],
    [
      ...command.slice(1),
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      certs.certFile,
      '--tls-key-file',
      certs.keyFile,
      '--tls-ca-cert-file',
      certs.caFile,
      '--tls-auth-clients',
      'no',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => resolve()),
  );
  // After the exit, once its output has been read to the end.
  const closed = new Promise<void>((resolve) =>
    child.once('close', () => resolve()),
  );
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) {
      await closed;
      // A build without TLS does not know the directive (Redis 6), or
      // knows it and finds no TLS connection type (Redis 7+, Valkey).
      if (
        (/tls-port/.test(output) && /Bad directive|unknown/i.test(output)) ||
        /Failed finding TLS support/.test(output)
      )
        throw new NoTlsBuildError(
          `${binary} was built without TLS: ${output.trim()}`,
        );
      throw new Error(`TLS ${binary} exited: ${output.trim()}`);
    }
    const probe = new Redis({
      host: '127.0.0.1',
      port,
      tls: { ca: certs.ca },
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      await probe.quit();
      break;
    } catch {
      if (probe.status !== 'end') probe.disconnect();
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`TLS ${binary} did not start: ${output.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  child.stdout.destroy();
  child.stderr.destroy();
  child.unref();
  return { port, url: `rediss://127.0.0.1:${port}`, binary, stop };
}
