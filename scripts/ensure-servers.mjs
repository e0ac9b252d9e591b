// Builds the servers the suite can also run on (docs/compatibility.md,
// "Servers and Node lines under test"): Redis 8.0 and Valkey 8.1 from the
// upstream tarballs of Debian trixie's source packages, each once, into a
// cache outside the clone. Prints `<name> <path of the server binary>` per
// server; use the path as REDLOCK_SERVER (or scripts/run-on.mjs --server=).
//
//   node scripts/ensure-servers.mjs [redis-8.0] [valkey-8.1]   (default: both)
//
// The tarball comes through `apt-get source --download-only` with a private
// apt directory (its own sources list naming trixie, lists and cache), so the
// system's apt configuration is left alone; apt checks it against trixie's
// signed Sources index, and this script against the pinned SHA-256. Only the
// upstream (.orig) tarball is used: Debian's patches are not applied. Built
// with `make BUILD_TLS=no` under `nice -n 19`, 2 jobs. A server that cannot
// be fetched or built is reported with the reason and the exit code is 1.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Root of the cache: REDLOCK_CACHE, else $XDG_CACHE_HOME/nestjs-redlock. */
export function cacheRoot() {
  return (
    process.env.REDLOCK_CACHE ||
    join(
      process.env.XDG_CACHE_HOME || join(homedir(), '.cache'),
      'nestjs-redlock',
    )
  );
}

/** What each server is built from (Debian trixie source packages). */
export const SERVERS = {
  'redis-8.0': {
    source: 'redis',
    orig: 'redis_8.0.2.orig.tar.gz',
    sha256: 'caf3c0069f06fc84c5153bd2a348b204c578de80490c73857bee01d9b5d7401f',
    dir: 'redis-8.0.2',
    binaries: ['redis-server', 'redis-cli'],
  },
  'valkey-8.1': {
    source: 'valkey',
    // dfsg: Debian's repack, with the bundled deps (jemalloc, lua, hiredis…).
    orig: 'valkey_8.1.1+dfsg1.orig.tar.xz',
    sha256: 'd9bbd82eecb82f359e649a0007ad3dc1b47cc15afa626348ca86b73c4ae2c7ee',
    dir: 'valkey-8.1.1',
    binaries: ['valkey-server', 'valkey-cli'],
  },
};
const MAKE_ARGS = ['-j2', 'BUILD_TLS=no'];

class Unavailable extends Error {}

const has = (cmd) =>
  spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status ===
  0;
const sha256 = (file) =>
  createHash('sha256').update(readFileSync(file)).digest('hex');

/** The path of a server's binary in the cache (whether built or not). */
export function serverPath(name) {
  const spec = SERVERS[name];
  if (!spec)
    throw new Unavailable(
      `unknown server '${name}' (known: ${Object.keys(SERVERS).join(', ')})`,
    );
  return join(cacheRoot(), 'servers', spec.dir, 'bin', spec.binaries[0]);
}

/** The Debian mirror and keyring this machine's apt uses (deb822 or one-line). */
function debianMirror() {
  const files = ['/etc/apt/sources.list'];
  try {
    for (const f of readdirSync('/etc/apt/sources.list.d'))
      if (/\.(list|sources)$/.test(f))
        files.push(`/etc/apt/sources.list.d/${f}`);
  } catch {
    // no sources.list.d
  }
  for (const file of files) {
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+)/im.exec(stanza)?.[1];
      const keyring = /^Signed-By:\s*(\/\S+)/im.exec(stanza)?.[1];
      if (uri && /\/debian\/?$/.test(uri)) return { uri, keyring };
    }
    const line = /^deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+\/debian\/?)\s/m.exec(
      text,
    );
    if (line) return { uri: line[1] };
  }
  return { uri: 'http://deb.debian.org/debian' };
}

/** Fetches a server's orig tarball into <cache>/downloads (once). */
function fetchTarball(spec, log) {
  const downloads = join(cacheRoot(), 'downloads');
  const tarball = join(downloads, spec.orig);
  if (existsSync(tarball) && sha256(tarball) === spec.sha256) return tarball;
  if (!has('apt-get'))
    throw new Unavailable(
      `no apt-get here: ${spec.orig} is fetched from Debian trixie's source ` +
        `package '${spec.source}' with apt-get source (Debian/Ubuntu only); ` +
        'build the server yourself and set REDLOCK_SERVER to its binary',
    );
  const { uri, keyring: systemKeyring } = debianMirror();
  const keyring = [
    systemKeyring,
    '/usr/share/keyrings/debian-archive-keyring.gpg',
  ].find((k) => k && existsSync(k));
  if (!keyring)
    throw new Unavailable(
      'no Debian archive keyring (/usr/share/keyrings/debian-archive-keyring.gpg): ' +
        'install the debian-archive-keyring package',
    );
  const apt = join(cacheRoot(), 'apt');
  for (const d of ['lists/partial', 'cache/archives/partial'])
    mkdirSync(join(apt, d), { recursive: true });
  mkdirSync(downloads, { recursive: true });
  const list = join(apt, 'sources.list');
  writeFileSync(list, `deb-src [signed-by=${keyring}] ${uri} trixie main\n`);
  const options = [
    '-o',
    `Dir::Etc::sourcelist=${list}`,
    '-o',
    'Dir::Etc::sourceparts=-',
    '-o',
    `Dir::State::Lists=${join(apt, 'lists')}`,
    '-o',
    `Dir::Cache=${join(apt, 'cache')}`,
    // As root apt downloads as _apt, which cannot write into a home cache.
    '-o',
    'APT::Sandbox::User=root',
  ];
  log(
    `fetching ${spec.orig} (Debian trixie source package ${spec.source}) from ${uri}`,
  );
  const update = spawnSync('apt-get', [...options, '-qq', 'update'], {
    encoding: 'utf8',
  });
  if (update.status !== 0)
    throw new Unavailable(
      `apt-get update of the private trixie list failed: ${(update.stderr || update.stdout).trim()}`,
    );
  // Exits non-zero when a mirror lacks the .dsc or the Debian patch tarball,
  // which are not used: only the orig tarball must have arrived.
  const source = spawnSync(
    'apt-get',
    [...options, '-qq', 'source', '--download-only', spec.source],
    { cwd: downloads, encoding: 'utf8' },
  );
  if (!existsSync(tarball)) {
    const shown = spawnSync('apt-cache', [...options, 'showsrc', spec.source], {
      encoding: 'utf8',
    }).stdout;
    const offered = [...(shown ?? '').matchAll(/\s(\S+\.orig\.tar\.\w+)$/gm)]
      .map((m) => m[1])
      .join(', ');
    throw new Unavailable(
      `apt-get source ${spec.source} did not bring ${spec.orig}` +
        (offered
          ? ` (trixie now has: ${offered}; update SERVERS in scripts/ensure-servers.mjs)`
          : '') +
        `: ${(source.stderr || '').trim()}`,
    );
  }
  const sum = sha256(tarball);
  if (sum !== spec.sha256) {
    rmSync(tarball);
    throw new Unavailable(
      `${spec.orig} has SHA-256 ${sum}, expected ${spec.sha256}`,
    );
  }
  return tarball;
}

/** Makes sure a C toolchain is there (installs build-essential as root with apt). */
function ensureToolchain(log) {
  const missing = ['make', 'cc', 'tar', 'xz', 'pkg-config'].filter(
    (c) => !has(c),
  );
  if (missing.length === 0) return;
  const isRoot = process.getuid?.() === 0;
  if (!isRoot || !has('apt-get'))
    throw new Unavailable(
      `missing build tools: ${missing.join(', ')} (Debian: apt-get install build-essential pkg-config xz-utils)`,
    );
  log(
    `missing ${missing.join(', ')}: installing build-essential pkg-config xz-utils with apt-get`,
  );
  const quiet = {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  };
  execFileSync('apt-get', ['update', '-qq'], quiet);
  execFileSync(
    'apt-get',
    ['install', '-y', '-qq', 'build-essential', 'pkg-config', 'xz-utils'],
    quiet,
  );
}

/** Builds a server once; returns the path of its binary. */
export function ensureServer(name, log = (line) => console.error(line)) {
  const binary = serverPath(name);
  const spec = SERVERS[name];
  if (spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0)
    return binary;
  const tarball = fetchTarball(spec, log);
  ensureToolchain(log);
  const servers = join(cacheRoot(), 'servers');
  const work = join(servers, `.build-${spec.dir}-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    execFileSync('tar', ['-xf', tarball, '-C', work]);
    const tree = join(work, spec.dir);
    const logFile = join(work, 'build.log');
    log(
      `building ${name} (make ${MAKE_ARGS.join(' ')}, nice 19); log: ${logFile}`,
    );
    const started = Date.now();
    const make = spawnSync(
      'sh',
      ['-c', `nice -n 19 make ${MAKE_ARGS.join(' ')} > "${logFile}" 2>&1`],
      { cwd: tree, stdio: 'inherit', env: { ...process.env, MAKEFLAGS: '' } },
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    if (make.status !== 0) {
      const tail = readFileSync(logFile, 'utf8')
        .trim()
        .split('\n')
        .slice(-15)
        .join('\n');
      throw new Unavailable(
        `make failed (exit ${make.status}) after ${seconds} s; full log kept in ${logFile}:\n${tail}`,
      );
    }
    const staged = join(work, 'out');
    mkdirSync(join(staged, 'bin'), { recursive: true });
    for (const b of spec.binaries)
      copyFileSync(join(tree, 'src', b), join(staged, 'bin', b));
    copyFileSync(logFile, join(staged, 'build.log'));
    const version = execFileSync(
      join(staged, 'bin', spec.binaries[0]),
      ['--version'],
      {
        encoding: 'utf8',
      },
    ).trim();
    writeFileSync(
      join(staged, 'BUILD-INFO'),
      [
        `tarball: ${spec.orig} (Debian trixie source package ${spec.source}, upstream source, no Debian patches)`,
        `sha256: ${spec.sha256}`,
        `make: ${MAKE_ARGS.join(' ')}`,
        `build seconds: ${seconds}`,
        `version: ${version}`,
        '',
      ].join('\n'),
    );
    const final = join(servers, spec.dir);
    rmSync(final, { recursive: true, force: true });
    renameSync(staged, final);
    log(`built ${name} in ${seconds} s: ${version}`);
    rmSync(work, { recursive: true, force: true });
  } catch (error) {
    // A failed build keeps its tree and log for a look; a retry starts anew.
    if (!(error instanceof Unavailable))
      rmSync(work, { recursive: true, force: true });
    throw error;
  }
  return binary;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = process.argv.slice(2);
  let failed = 0;
  for (const name of names.length ? names : Object.keys(SERVERS)) {
    try {
      console.log(`${name} ${ensureServer(name)}`);
    } catch (error) {
      failed++;
      console.error(
        `${name}: cannot be built: ${error instanceof Error ? error.message : error}`,
      );
    }
  }
  process.exitCode = failed ? 1 : 0;
}
