import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { RedisServer, freePort } from './redis-nodes.mjs';

// Real Redis Cluster (cluster-mode redis-server processes) on 127.0.0.1 for
// tests where a whole cluster is one node of a Redlock quorum. Built on
// RedisServer from redis-nodes.mjs, so the servers die with the process
// that started them (setpriv pdeathsig) and are stopped by pid. Types are in
// redis-clusters.d.mts. Needs Redis 7.0+ (--cluster-port, CLUSTER MEET with
// a bus port): ephemeral ports are above 55535, so the default bus port
// (port + 10000) would not exist.

/** Cluster node timeout: small, so a killed master fails over in ~2 s. */
export const NODE_TIMEOUT = 1000;
const SLOTS = 16384;
/** Clusters started by this process and not yet stopped, for stopAll(). */
const running = new Set();

/** One cluster-mode redis-server of a RedisCluster. */
export class ClusterServer {
  /** @param {RedisServer} server @param {number} busPort */
  constructor(server, busPort) {
    this.server = server;
    this.busPort = busPort;
    /** Cluster node id (CLUSTER MYID), fixed for the node's life. */
    this.id = '';
    /** Role as last observed: 'master' | 'replica'. */
    this.role = 'master';
    /** For a replica, the node id of its master as last observed. */
    this.masterId = undefined;
    /** @type {Redis | undefined} */
    this.adminClient = undefined;
  }

  get port() {
    return this.server.port;
  }
  get pid() {
    return this.server.pid;
  }
  get url() {
    return this.server.url;
  }
  /** The server's directory (nodes.conf), removed by stop(). */
  get dir() {
    return this.server.dir;
  }
  /** Whether the process is running (not killed or stopped). */
  get alive() {
    const child = this.server.child;
    return !!child && child.exitCode === null && child.signalCode === null;
  }

  /**
   * A plain client kept for the harness's own commands (do not close it).
   * Made again on the next call once its server has gone.
   */
  admin() {
    if (this.adminClient && this.adminClient.status !== 'end')
      return this.adminClient;
    this.adminClient = this.client({ commandTimeout: 5000 });
    return this.adminClient;
  }

  /**
   * A fresh plain (non-cluster) client; the caller closes it. It does not
   * reconnect: once its server is killed it ends by itself, and quitting a
   * client still reconnecting to a dead server arms ioredis's 2 s
   * socket-destroy timer on the old, closed socket, which kept jest alive.
   *
   * @param {import('ioredis').RedisOptions} [options]
   */
  client(options = {}) {
    const client = new Redis(this.port, '127.0.0.1', {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...options,
    });
    client.on('error', () => undefined);
    return client;
  }

  /** SIGKILL: a crash. The node keeps its place in the cluster, failed. */
  kill() {
    return this.server.kill();
  }
  /**
   * Starts the server again on the same ports, empty but with its
   * nodes.conf: it rejoins the cluster as the node it was (a master that
   * was failed over comes back as a replica). Call the cluster's settle().
   */
  restart() {
    return this.server.restart();
  }
  freeze() {
    this.server.freeze();
  }
  thaw() {
    this.server.thaw();
  }
}

/** Starts one cluster-mode server on free ports (retried on a port clash). */
async function startNode() {
  for (let tries = 0; ; tries++) {
    const [port, busPort] = await Promise.all([freePort(), freePort()]);
    if (port === busPort) continue;
    const server = new RedisServer(port);
    server.args = [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(server.dir, 'nodes.conf'),
      '--cluster-port',
      String(busPort),
      '--cluster-node-timeout',
      String(NODE_TIMEOUT),
      // A lone master never learns its address from another node, and
      // its CLUSTER SLOTS would give clients an empty host.
      '--cluster-announce-ip',
      '127.0.0.1',
      // A master waits 5 s by default for more replicas before a diskless
      // full sync: that was most of a 3x1 cluster's start-up time.
      '--repl-diskless-sync-delay',
      '0',
    ];
    try {
      await server.spawn();
      return new ClusterServer(server, busPort);
    } catch (error) {
      server.cleanup();
      if (tries >= 4) throw error;
    }
  }
}

/** `key:value` lines of INFO / CLUSTER INFO as an object. */
function parseInfo(text) {
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => [
        line.slice(0, line.indexOf(':')),
        line.slice(line.indexOf(':') + 1),
      ]),
  );
}

/** CLUSTER NODES as objects; slot ranges without the [migrating] markers. */
function parseNodes(text) {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addr, flags, master, , , , link, ...slots] = line.split(' ');
      return {
        id,
        port: Number(addr.split('@')[0].split(':')[1]),
        flags: flags.split(','),
        masterId: master === '-' ? undefined : master,
        link,
        slots: slots.filter((s) => !s.startsWith('[')),
      };
    });
}

/** Polls `check` (a reason string while not done, undefined when done). */
async function until(what, check, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  let reason = 'not checked';
  for (;;) {
    try {
      reason = await check();
    } catch (error) {
      reason = String(error);
    }
    if (reason === undefined) return;
    if (Date.now() > deadline)
      throw new Error(`${what}: not done in ${timeoutMs} ms (${reason})`);
    await sleep(25);
  }
}

/** Several Redis Cluster servers forming one cluster; see startCluster. */
export class RedisCluster {
  /** @type {Map<number, {slot: number, from: ClusterServer, to: ClusterServer}>} */
  migrations = new Map();

  /** @param {ClusterServer[]} servers */
  constructor(servers) {
    this.servers = servers;
  }

  /** Seed URLs, one per server. */
  get seeds() {
    return this.servers.map((s) => s.url);
  }

  /**
   * A new ioredis Cluster on the seeds (the caller closes it). Node
   * connections do not retry a command on their own, so a dead node shows as
   * a failover/redirection in the cluster client, which follows MOVED and ASK
   * as it does for users; reconnection is every 100 ms so a test may kill and
   * restart the whole cluster. While the whole cluster is down, commands
   * wait in the offline queue until it is back; `enableOfflineQueue: false`
   * fails them at once instead (and fails commands sent before 'ready').
   */
  client(options = {}) {
    const client = new Cluster(
      this.servers.map((s) => ({ host: '127.0.0.1', port: s.port })),
      {
        clusterRetryStrategy: () => 100,
        ...options,
        redisOptions: {
          maxRetriesPerRequest: 0,
          connectTimeout: 1000,
          ...options.redisOptions,
        },
      },
    );
    // While the whole cluster is down ioredis emits an error per failed
    // slots refresh; unheard, it prints each one as unhandled.
    client.on('error', () => undefined);
    return client;
  }

  #alive() {
    return this.servers.filter((s) => s.alive);
  }

  /** Roles as each running server reports them now (ROLE), stored on it. */
  async refreshRoles() {
    const alive = this.#alive();
    const roles = await Promise.all(alive.map((s) => s.admin().call('ROLE')));
    alive.forEach((server, i) => {
      const [role, , masterPort] = /** @type {any[]} */ (roles[i]);
      server.role = role === 'master' ? 'master' : 'replica';
      server.masterId =
        role === 'master'
          ? undefined
          : this.servers.find((s) => s.port === Number(masterPort))?.id;
    });
    return alive;
  }

  async masters() {
    return (await this.refreshRoles()).filter((s) => s.role === 'master');
  }

  async replicas() {
    return (await this.refreshRoles()).filter((s) => s.role === 'replica');
  }

  /** The server owning a slot, by CLUSTER SLOTS on a running server. */
  async ownerOf(slot) {
    const [asked] = this.#alive();
    const ranges = /** @type {any[]} */ (
      await asked.admin().call('CLUSTER', 'SLOTS')
    );
    const range = ranges.find(([start, end]) => start <= slot && slot <= end);
    if (!range) throw new Error(`slot ${slot} is not served`);
    return /** @type {ClusterServer} */ (
      this.servers.find((s) => s.port === Number(range[2][1]))
    );
  }

  /** The slot of a key (CLUSTER KEYSLOT). */
  async slotOf(key) {
    const [asked] = this.#alive();
    return Number(await asked.admin().call('CLUSTER', 'KEYSLOT', key));
  }

  /** The master serving a key's slot. */
  async masterOf(key) {
    return this.ownerOf(await this.slotOf(key));
  }

  /**
   * Waits until the cluster has settled: every running server reports
   * cluster_state:ok with all 16384 slots ok, all see the same running nodes
   * with the same roles, masters and slots, none of them failing or in
   * handshake, every killed node flagged failed, and every replica's link to
   * its master up (so WAIT works at once).
   */
  async settle(timeoutMs = 15_000) {
    await until('cluster settle', () => this.#unsettled(), timeoutMs);
    await this.refreshRoles();
  }

  async #unsettled() {
    const alive = this.#alive();
    const ids = new Set(alive.map((s) => s.id));
    const states = await Promise.all(
      alive.map(async (s) => {
        const a = s.admin();
        const [info, nodes, repl] = await Promise.all([
          a.call('CLUSTER', 'INFO'),
          a.call('CLUSTER', 'NODES'),
          a.info('replication'),
        ]);
        return {
          server: s,
          info: parseInfo(info),
          nodes: parseNodes(nodes),
          repl: parseInfo(repl),
        };
      }),
    );
    let agreed;
    for (const { server, info, nodes, repl } of states) {
      const at = `on ${server.port}`;
      if (info.cluster_state !== 'ok')
        return `cluster_state ${info.cluster_state} ${at}`;
      if (info.cluster_slots_ok !== String(SLOTS))
        return `${info.cluster_slots_ok} slots ok ${at}`;
      for (const node of nodes) {
        const running = ids.has(node.id);
        if (
          running &&
          node.flags.some((f) =>
            ['fail', 'fail?', 'handshake', 'noaddr'].includes(f),
          )
        )
          return `${node.port} flagged ${node.flags.join(',')} ${at}`;
        if (running && node.link !== 'connected')
          return `no link to ${node.port} ${at}`;
        if (!running && !node.flags.includes('fail'))
          return `dead ${node.port} not failed ${at}`;
      }
      const view = nodes
        .filter((n) => ids.has(n.id))
        .map(
          (n) =>
            `${n.id} ${n.flags.includes('master') ? 'm' : 's'} ${n.masterId} ${n.slots.join(',')}`,
        )
        .sort()
        .join('\n');
      if (nodes.filter((n) => ids.has(n.id)).length !== ids.size)
        return `nodes missing ${at}`;
      if (agreed === undefined) agreed = view;
      else if (view !== agreed) return `views differ ${at}`;
      if (repl.role === 'slave' && repl.master_link_status !== 'up')
        return `replica link down ${at}`;
      const replicasOf = nodes.filter(
        (n) => n.masterId === server.id && ids.has(n.id),
      ).length;
      if (
        repl.role === 'master' &&
        Number(repl.connected_slaves) !== replicasOf
      )
        return `${repl.connected_slaves}/${replicasOf} replicas connected ${at}`;
    }
    return undefined;
  }

  /** Creates the cluster from fresh servers: the first `masters` get slots. */
  async create(masters, replicas) {
    const all = this.servers;
    await Promise.all(
      all.map(async (s) => {
        s.id = String(await s.admin().call('CLUSTER', 'MYID'));
      }),
    );
    // Distinct config epochs before meeting: no epoch collision to resolve.
    await Promise.all(
      all.slice(0, masters).map(async (s, i) => {
        const a = s.admin();
        await a.call('CLUSTER', 'SET-CONFIG-EPOCH', i + 1);
        const start = Math.floor((i * SLOTS) / masters);
        const end = Math.floor(((i + 1) * SLOTS) / masters) - 1;
        await a.call('CLUSTER', 'ADDSLOTSRANGE', start, end);
      }),
    );
    await Promise.all(
      all
        .slice(1)
        .map((s) =>
          all[0]
            .admin()
            .call('CLUSTER', 'MEET', '127.0.0.1', s.port, s.busPort),
        ),
    );
    // REPLICATE needs the replica to know its master's id.
    await until('cluster meet', async () => {
      for (const s of all) {
        const nodes = parseNodes(
          String(await s.admin().call('CLUSTER', 'NODES')),
        );
        const known = nodes.filter((n) => !n.flags.includes('handshake'));
        if (known.length < all.length)
          return `${s.port} knows ${known.length} nodes`;
      }
      return undefined;
    });
    await Promise.all(
      all.slice(masters).map((s, j) => {
        const master = all[Math.floor(j / replicas)];
        return s.admin().call('CLUSTER', 'REPLICATE', master.id);
      }),
    );
    await this.settle();
  }

  /**
   * Kills a master (SIGKILL) and waits until one of its replicas is promoted
   * and the cluster has settled again. Needs 3+ masters: the surviving
   * masters must be a majority to vote.
   */
  async failover(master) {
    // Fewer surviving masters than a majority never vote: fail now, not
    // after the 15 s wait.
    if ((await this.masters()).length < 3)
      throw new Error('failover needs 3 or more masters');
    const candidates = this.servers.filter(
      (s) => s.alive && s.masterId === master.id,
    );
    if (master.role !== 'master' || candidates.length === 0)
      throw new Error(`${master.port} is not a master with a running replica`);
    const started = Date.now();
    await master.kill();
    let promoted;
    await until('failover', async () => {
      for (const s of candidates) {
        const [role] = /** @type {any[]} */ (await s.admin().call('ROLE'));
        if (role === 'master') promoted = s;
      }
      return promoted ? undefined : 'no replica promoted';
    });
    await this.settle();
    return {
      promoted: /** @type {ClusterServer} */ (promoted),
      ms: Date.now() - started,
    };
  }

  /** Moves keys of a slot with MIGRATE (all of them if `keys` is omitted). */
  async #move(from, to, slot, keys) {
    const source = from.admin();
    for (;;) {
      const batch =
        keys ??
        /** @type {string[]} */ (
          await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)
        );
      if (batch.length === 0) return;
      await source.call(
        'MIGRATE',
        '127.0.0.1',
        to.port,
        '',
        0,
        5000,
        'KEYS',
        ...batch,
      );
      if (keys) return;
    }
  }

  /**
   * Starts moving a slot to another master and stops halfway: the source is
   * MIGRATING, the target IMPORTING, and `keys` (default: half the slot's
   * keys, rounded up) are on the target already, so the source answers ASK
   * for them. finishMigration() completes it.
   */
  async beginMigration(slot, to, keys) {
    const from = await this.ownerOf(slot);
    if (from === to) throw new Error(`slot ${slot} is on ${to.port} already`);
    await to.admin().call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
    await from.admin().call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
    if (!keys) {
      const count = Number(
        await from.admin().call('CLUSTER', 'COUNTKEYSINSLOT', slot),
      );
      keys = count
        ? /** @type {string[]} */ (
            await from
              .admin()
              .call('CLUSTER', 'GETKEYSINSLOT', slot, Math.ceil(count / 2))
          )
        : [];
    }
    if (keys.length) await this.#move(from, to, slot, keys);
    const migration = { slot, from, to };
    this.migrations.set(slot, migration);
    return migration;
  }

  /**
   * Completes a migration begun with beginMigration (every pending one if
   * no slot is given): moves the remaining keys, assigns the slot to the
   * target on the target, the source and every other master, and settles.
   */
  async finishMigration(slot) {
    const pending =
      slot === undefined
        ? [...this.migrations.values()]
        : [this.migrations.get(slot)];
    for (const m of pending) {
      if (!m) throw new Error(`no migration of slot ${slot} in progress`);
      await this.#move(m.from, m.to, m.slot);
      const masters = await this.masters();
      const order = [
        m.to,
        m.from,
        ...masters.filter((s) => s !== m.to && s !== m.from),
      ];
      for (const s of order)
        await s.admin().call('CLUSTER', 'SETSLOT', m.slot, 'NODE', m.to.id);
      this.migrations.delete(m.slot);
    }
    await this.settle();
  }

  /** Moves a slot with all its keys to another master. */
  async migrateSlot(slot, to) {
    await this.beginMigration(slot, to, []);
    await this.finishMigration(slot);
  }

  /** Kills every server (SIGKILL): the whole cluster down, dirs kept. */
  async kill() {
    await Promise.all(this.servers.map((s) => s.kill()));
  }

  /**
   * Restarts every server (killed or not) on the same ports, empty, with
   * its nodes.conf, and settles: the whole cluster back after kill().
   */
  async restart() {
    await Promise.all(this.servers.map((s) => s.restart()));
    await this.settle();
  }

  /** Kills every server by pid and removes their directories. */
  async stop() {
    running.delete(this);
    await Promise.all(this.servers.map((s) => s.server.stop()));
  }
}

/**
 * Starts a cluster of `masters` masters with `replicas` replicas each on
 * free loopback ports (persistence off) and resolves once it has settled.
 * Takes about 2 s whatever the size: a master does not report
 * cluster_state:ok until 2 s after its start (Redis's
 * CLUSTER_WRITABLE_DELAY); everything else is done in parallel meanwhile.
 */
export async function startCluster({ masters = 3, replicas = 1 } = {}) {
  if (!(masters >= 1 && replicas >= 0))
    throw new Error('masters >= 1, replicas >= 0');
  const results = await Promise.allSettled(
    Array.from({ length: masters * (1 + replicas) }, () => startNode()),
  );
  const started = results.flatMap((r) =>
    r.status === 'fulfilled' ? [r.value] : [],
  );
  const cluster = new RedisCluster(started);
  running.add(cluster);
  try {
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await cluster.create(masters, replicas);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Starts `count` clusters in parallel (a quorum made of clusters). */
export async function startClusters(count, options) {
  const results = await Promise.allSettled(
    Array.from({ length: count }, () => startCluster(options)),
  );
  const clusters = results.flatMap((r) =>
    r.status === 'fulfilled' ? [r.value] : [],
  );
  const failed = results.find((r) => r.status === 'rejected');
  if (!failed) return clusters;
  await Promise.all(clusters.map((c) => c.stop()));
  throw failed.reason;
}

/** Stops every cluster this process started and has not stopped. */
export async function stopAll() {
  await Promise.all([...running].map((c) => c.stop()));
}
