// Real redis-server processes, each in a network namespace of its own,
// behind a router namespace, so that a test can cut a node off the network
// the way a real partition does: silently, with the client's TCP connection
// left open and its packets lost, not refused.
//
//   host (10.B.0.1) --veth-- router (10.B.0.2 | 10.B.<i+1>.1) --veth-- node i (10.B.<i+1>.2:6379)
//
// Only the host end of the first veth pair, its route to 10.B.0.0/16 (via
// the router, never the default gateway) and the namespaces live outside:
// every packet the nodes exchange with this machine goes to addresses of
// namespaces created here. B is picked at random in 100-199 among the /16s
// the host routes nowhere but by its default route.
//
// partition(i, 'blackhole'): a blackhole route in the router for the node's
// address (requests vanish) and one in the node's namespace for the host's
// address (replies vanish). Neither end is told: the client's kernel sends
// without error and retransmits with its exponential backoff, as across a
// real partition. (A blackhole route on the client's own host would not do:
// the kernel fails the sends locally, and the connection recovered within
// milliseconds of the heal.)
// partition(i, 'down'): the node's interface goes down inside its
// namespace (a dead NIC or cable); the router keeps its route, on a link
// without carrier, and drops what it forwards. Not silent: the router,
// unable to reach the node, answers with ICMP host unreachable, on which
// Linux retransmits at once instead of waiting out its backoff.
//
// Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip` (iproute2):
// `netnsUnavailable()` says why not, so callers can skip with a message.
// Everything started is stopped by pid and every namespace, veth and route
// deleted in stop(), also after a failed start, and at process exit
// (synchronously) when stop() was not reached. Namespaces left by a process
// that died (its pid in their name) are removed at the next start.
// Plain JavaScript like redis-nodes.mjs; types in netns-nodes.d.mts.
import { spawn, spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { SERVER_BINARY, SERVERS_DIE_WITH_PARENT } from './redis-nodes.mjs';

const PREFIX = 'rlns'; // namespace names: rlns<pid>r (router), rlns<pid>n<i> (nodes)
const IP_TIMEOUT_MS = 5000;
const START_TIMEOUT_MS = 10_000;
const PORT = 6379;

/** Runs `ip ...args`; throws with its stderr on failure. */
function ip(...args) {
  const r = spawnSync('ip', args, { encoding: 'utf8', timeout: IP_TIMEOUT_MS });
  if (r.error) throw r.error;
  if (r.status !== 0)
    throw new Error(`ip ${args.join(' ')}: ${(r.stderr || r.stdout).trim() || `exit ${r.status}`}`);
  return r.stdout;
}
/** The same, ignoring failures (cleanup). */
function ipQuiet(...args) {
  spawnSync('ip', args, { stdio: 'ignore', timeout: IP_TIMEOUT_MS });
}
const inNs = (ns, ...args) => ip('netns', 'exec', ns, ...args);

let probed;
/**
 * Why network namespaces cannot be used here (not root, no iproute2, a
 * container without CAP_SYS_ADMIN), or undefined when they can: one
 * namespace is created and deleted to find out (once per process).
 */
export function netnsUnavailable() {
  if (probed !== undefined) return probed || undefined;
  const name = `${PREFIX}${process.pid}probe`;
  try {
    if (process.platform !== 'linux') throw new Error(`platform ${process.platform}, not linux`);
    if (process.getuid?.() !== 0) throw new Error('not running as root');
    ip('netns', 'add', name);
    try {
      inNs(name, 'ip', 'link', 'set', 'lo', 'up');
    } finally {
      ipQuiet('netns', 'del', name);
    }
    const found = spawnSync(SERVER_BINARY, ['--version'], { stdio: 'ignore' });
    if (found.error) throw new Error(`${SERVER_BINARY} not found`);
    probed = '';
  } catch (error) {
    probed = `network namespaces not available: ${error instanceof Error ? error.message : String(error)}`;
  }
  return probed || undefined;
}

/** Deletes namespaces (and their host veth) left by processes of ours that died. */
function sweepLeftovers() {
  const names = ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter((n) => n.startsWith(PREFIX));
  for (const name of names) {
    const pid = Number(/^rlns(\d+)/.exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    for (const p of pidsIn(name)) killQuiet(p);
    ipQuiet('netns', 'del', name);
    if (name.endsWith('r')) ipQuiet('link', 'del', `rl${pid}h`);
  }
}
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
function pidsIn(ns) {
  const r = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8', timeout: IP_TIMEOUT_MS });
  return (r.stdout ?? '').split('\n').map(Number).filter(Boolean);
}
function killQuiet(pid) {
  try {
    process.kill(pid, 'SIGCONT');
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** A /16 in 10.100-199.0.0 that the host routes only through its default route. */
function freeBlock() {
  const routes = ip('-4', 'route', 'show', 'table', 'all');
  const addrs = ip('-4', '-o', 'addr', 'show');
  for (let tries = 0; tries < 50; tries++) {
    const b = 100 + Math.floor(Math.random() * 100);
    const taken = new RegExp(`(^|\\s)10\\.${b}\\.`, 'm');
    if (!taken.test(routes) && !taken.test(addrs)) return b;
  }
  throw new Error('no free 10.x.0.0/16 block for the namespaces');
}

/** One redis-server in its namespace. */
class NetnsNode {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  child;
  /** @type {'blackhole' | 'down' | undefined} */
  partitioned;

  constructor(set, index) {
    this.set = set;
    this.index = index;
    this.ns = `${set.id}n${index}`;
    this.host = `10.${set.block}.${index + 1}.2`;
    this.gateway = `10.${set.block}.${index + 1}.1`;
    this.port = PORT;
    this.ifRouter = `rl${process.pid}r${index}`; // router end
    this.ifNode = `rl${process.pid}n${index}`; // node end
  }

  get url() {
    return `redis://${this.host}:${this.port}`;
  }

  get pid() {
    return this.child?.pid;
  }

  wire() {
    const { router } = this.set;
    ip('netns', 'add', this.ns);
    this.set.namespaces.push(this.ns);
    inNs(router, 'ip', 'link', 'add', this.ifRouter, 'type', 'veth', 'peer', 'name', this.ifNode);
    inNs(router, 'ip', 'link', 'set', this.ifNode, 'netns', this.ns);
    inNs(router, 'ip', 'addr', 'add', `${this.gateway}/30`, 'dev', this.ifRouter);
    inNs(router, 'ip', 'link', 'set', this.ifRouter, 'up');
    inNs(this.ns, 'ip', 'link', 'set', 'lo', 'up');
    inNs(this.ns, 'ip', 'addr', 'add', `${this.host}/30`, 'dev', this.ifNode);
    inNs(this.ns, 'ip', 'link', 'set', this.ifNode, 'up');
    inNs(this.ns, 'ip', 'route', 'add', 'default', 'via', this.gateway);
  }

  async spawn() {
    // The server under test: REDLOCK_SERVER, else redis-server on PATH
    // (scripts/redis-nodes.mjs).
    const server = SERVERS_DIE_WITH_PARENT
      ? ['setpriv', '--pdeathsig', 'KILL', SERVER_BINARY]
      : [SERVER_BINARY];
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.ns,
        ...server,
        '--port',
        String(this.port),
        '--bind',
        this.host,
        '--protected-mode',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        '/tmp',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let output = '';
    const onData = (chunk) => (output += chunk.toString());
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const exited = new Promise((_, reject) =>
      child.once('exit', (code) => reject(new Error(`redis-server in ${this.ns} exited (${code}): ${output.trim()}`))),
    );
    exited.catch(() => undefined);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const ok = await Promise.race([this.probe(), exited]);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`redis-server in ${this.ns} did not start: ${output.trim()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    child.removeAllListeners('exit');
    child.stdout.destroy();
    child.stderr.destroy();
    child.unref();
  }

  async probe() {
    const client = new Redis(this.port, this.host, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 500,
      disconnectTimeout: 0,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      return true;
    } catch {
      if (client.status !== 'end') client.disconnect();
      return false;
    }
  }

  partition(mode) {
    if (this.partitioned) this.heal();
    if (mode === 'blackhole') {
      inNs(this.set.router, 'ip', 'route', 'add', 'blackhole', `${this.host}/32`);
      inNs(this.ns, 'ip', 'route', 'add', 'blackhole', `${this.set.hostAddr}/32`);
    } else if (mode === 'down') {
      inNs(this.ns, 'ip', 'link', 'set', this.ifNode, 'down');
    } else throw new Error(`partition mode ${mode}: 'blackhole' or 'down'`);
    this.partitioned = mode;
  }

  heal() {
    if (this.partitioned === 'blackhole') {
      inNs(this.set.router, 'ip', 'route', 'del', 'blackhole', `${this.host}/32`);
      inNs(this.ns, 'ip', 'route', 'del', 'blackhole', `${this.set.hostAddr}/32`);
    } else if (this.partitioned === 'down') {
      inNs(this.ns, 'ip', 'link', 'set', this.ifNode, 'up');
      // Taking the link down removed the default route; put it back.
      inNs(this.ns, 'ip', 'route', 'replace', 'default', 'via', this.gateway);
    }
    this.partitioned = undefined;
  }

  /** SIGKILL of the server, waited for (bounded). */
  async kill() {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.ref();
    const exited = new Promise((r) => child.once('exit', r));
    killQuiet(child.pid);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000).unref())]);
  }

  /** SIGSTOP: sockets stay open, nothing is answered. */
  freeze() {
    if (this.child?.pid) process.kill(this.child.pid, 'SIGSTOP');
  }

  /** SIGCONT. */
  thaw() {
    if (this.child?.pid) process.kill(this.child.pid, 'SIGCONT');
  }

  /** A fresh client (the caller closes it). */
  client() {
    return new Redis(this.port, this.host, { maxRetriesPerRequest: 0, connectTimeout: 1000 });
  }
}

/** Sets of nodes not stopped yet, cleaned up synchronously at exit. */
const live = new Set();
let exitHook = false;
function cleanupAtExit() {
  for (const set of live) set.teardownSync();
}

/**
 * `count` redis-server nodes, each in its own network namespace behind a
 * router namespace (see the top of this file).
 */
export class NetnsNodes {
  /** @type {NetnsNode[]} */
  nodes = [];
  /** @type {string[]} */
  namespaces = [];
  hostLinkAdded = false;
  routeAdded = false;

  constructor(block) {
    this.block = block;
    this.id = `${PREFIX}${process.pid}x${Math.floor(Math.random() * 1e4)}`;
    this.router = `${this.id}r`;
    this.hostAddr = `10.${block}.0.1`;
    this.routerAddr = `10.${block}.0.2`;
    this.ifHost = `rl${process.pid}h`;
    this.ifRouterUp = `rl${process.pid}u`;
  }

  /**
   * Starts `count` nodes. Rejects with the reason when namespaces are not
   * available (see `netnsUnavailable`); cleans up whatever it made on any
   * failure.
   */
  static async start(count) {
    const why = netnsUnavailable();
    if (why) throw new Error(why);
    sweepLeftovers();
    for (const set of live)
      throw new Error(`one NetnsNodes per process at a time (${set.id} is running): its veth names carry the pid`);
    const set = new NetnsNodes(freeBlock());
    live.add(set);
    if (!exitHook) {
      exitHook = true;
      process.on('exit', cleanupAtExit);
    }
    try {
      set.wireRouter();
      for (let i = 0; i < count; i++) {
        const node = new NetnsNode(set, i);
        set.nodes.push(node);
        node.wire();
      }
      for (const node of set.nodes) await node.spawn();
      return set;
    } catch (error) {
      await set.stop();
      throw error;
    }
  }

  wireRouter() {
    ip('netns', 'add', this.router);
    this.namespaces.push(this.router);
    ip('link', 'add', this.ifHost, 'type', 'veth', 'peer', 'name', this.ifRouterUp);
    this.hostLinkAdded = true;
    ip('link', 'set', this.ifRouterUp, 'netns', this.router);
    ip('addr', 'add', `${this.hostAddr}/30`, 'dev', this.ifHost);
    ip('link', 'set', this.ifHost, 'up');
    inNs(this.router, 'ip', 'link', 'set', 'lo', 'up');
    inNs(this.router, 'ip', 'addr', 'add', `${this.routerAddr}/30`, 'dev', this.ifRouterUp);
    inNs(this.router, 'ip', 'link', 'set', this.ifRouterUp, 'up');
    // Forwarding inside the router namespace only (a per-namespace setting).
    inNs(this.router, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
    ip('route', 'add', `10.${this.block}.0.0/16`, 'via', this.routerAddr, 'dev', this.ifHost);
    this.routeAdded = true;
  }

  get urls() {
    return this.nodes.map((n) => n.url);
  }

  /** Cuts node `i` off: `'blackhole'` (packets lost both ways) or `'down'` (its interface down). */
  partition(i, mode) {
    this.nodes[i].partition(mode);
  }

  /** Puts node `i` back on the network. */
  heal(i) {
    this.nodes[i].heal();
  }

  /** Heals every partitioned node. */
  healAll() {
    for (const node of this.nodes) if (node.partitioned) node.heal();
  }

  /** Stops every server (by pid) and deletes the namespaces, veths and route. */
  async stop() {
    await Promise.all(this.nodes.map((n) => n.kill()));
    this.teardownSync();
  }

  teardownSync() {
    for (const node of this.nodes) if (node.child?.pid) killQuiet(node.child.pid);
    for (const ns of this.namespaces) for (const pid of pidsIn(ns)) killQuiet(pid);
    if (this.routeAdded) ipQuiet('route', 'del', `10.${this.block}.0.0/16`);
    if (this.hostLinkAdded) ipQuiet('link', 'del', this.ifHost);
    for (const ns of this.namespaces.splice(0).reverse()) ipQuiet('netns', 'del', ns);
    this.routeAdded = this.hostLinkAdded = false;
    live.delete(this);
  }
}
