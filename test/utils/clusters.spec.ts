import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Cluster, Redis } from 'ioredis';
import { SERVERS_DIE_WITH_PARENT } from '../../scripts/redis-nodes.mjs';
import {
  startCluster,
  startClusters,
  stopAll,
  type ClusterServer,
  type RedisCluster,
} from '../../scripts/redis-clusters.mjs';

/**
 * The Redis Cluster harness (scripts/redis-clusters.mjs) on real
 * cluster-mode servers: tests of Redlock over clusters rely on it starting
 * a settled cluster and on its faults (failover, slot migration, ASK) being
 * what they claim.
 */
describe('Redis Cluster harness', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  const plain: Redis[] = [];
  const on = (server: ClusterServer): Redis => {
    const c = server.client();
    plain.push(c);
    return c;
  };

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
    client = cluster.client();
  });
  afterAll(async () => {
    // Clients of killed servers have ended by themselves.
    await Promise.all(
      plain.filter((c) => c.status !== 'end').map((c) => c.quit()),
    );
    await client?.quit();
    await stopAll();
  });

  it('starts settled, and a Cluster client sets and gets keys on several slots', async () => {
    const masters = await cluster.masters();
    const replicas = await cluster.replicas();
    expect(masters).toHaveLength(3);
    expect(replicas).toHaveLength(3);
    // Each master has exactly one replica, attached.
    expect(replicas.map((r) => r.masterId).sort()).toEqual(
      masters.map((m) => m.id).sort(),
    );
    for (const s of cluster.servers) {
      const info = String(await s.admin().call('CLUSTER', 'INFO'));
      expect(info).toContain('cluster_state:ok');
      expect(info).toContain('cluster_slots_assigned:16384');
    }
    expect(cluster.seeds).toEqual(
      cluster.servers.map((s) => `redis://127.0.0.1:${s.port}`),
    );

    const keys = Array.from({ length: 12 }, (_, i) => `key:${i}`);
    await Promise.all(keys.map((k) => client.set(k, `v-${k}`)));
    expect(await Promise.all(keys.map((k) => client.get(k)))).toEqual(
      keys.map((k) => `v-${k}`),
    );
    const slots = new Set(
      await Promise.all(keys.map((k) => cluster.slotOf(k))),
    );
    const owners = new Set(
      await Promise.all(
        keys.map(async (k) => (await cluster.masterOf(k)).port),
      ),
    );
    expect(slots.size).toBeGreaterThan(1);
    expect(owners.size).toBe(3);
  });

  it('masterOf names the master where the key actually lives', async () => {
    for (const key of ['key:1', 'key:2', 'key:3', 'key:4']) {
      const owner = await cluster.masterOf(key);
      expect(await on(owner).get(key)).toBe(`v-${key}`);
      for (const other of await cluster.masters())
        if (other !== owner)
          await expect(on(other).get(key)).rejects.toThrow(/^MOVED /);
    }
  });

  it('failover kills a master and promotes its replica, keeping a key written with WAIT 1', async () => {
    const key = 'survivor';
    const master = await cluster.masterOf(key);
    const replica = (await cluster.replicas()).find(
      (r) => r.masterId === master.id,
    );
    const direct = on(master);
    await direct.set(key, 'kept');
    expect(await direct.call('WAIT', 1, 2000)).toBe(1);
    const oldPid = master.pid as number;

    const { promoted, ms } = await cluster.failover(master);
    console.log(`failover took ${ms} ms`);
    expect(promoted).toBe(replica);
    expect(promoted.role).toBe('master');
    expect(() => process.kill(oldPid, 0)).toThrow();
    expect((await cluster.masters()).map((m) => m.port).sort()).not.toContain(
      master.port,
    );
    expect(await cluster.masterOf(key)).toBe(promoted);
    expect(await client.get(key)).toBe('kept');

    // The old master comes back (empty, with its nodes.conf) as a replica.
    await master.restart();
    await cluster.settle();
    expect(master.role).toBe('replica');
    expect(master.masterId).toBe(promoted.id);
  });

  it('migrateSlot moves a slot with its keys; the client follows MOVED', async () => {
    const key = 'moving';
    await client.set(key, 'along');
    const from = await cluster.masterOf(key);
    const to = (await cluster.masters()).find((m) => m !== from)!;
    const started = Date.now();
    await cluster.migrateSlot(await cluster.slotOf(key), to);
    console.log(`migrateSlot took ${Date.now() - started} ms`);

    expect(await cluster.masterOf(key)).toBe(to);
    expect(await on(to).get(key)).toBe('along');
    await expect(on(from).get(key)).rejects.toThrow(/^MOVED /);
    // The client's slot map still names the old owner: it gets MOVED.
    expect(await client.get(key)).toBe('along');
  });

  it('a half-migrated slot answers ASK for a moved key until finishMigration', async () => {
    const [moved, stayed] = ['{half}moved', '{half}stayed'];
    await client.set(moved, 'm');
    await client.set(stayed, 's');
    const slot = await cluster.slotOf(moved);
    const from = await cluster.masterOf(moved);
    const to = (await cluster.masters()).find((m) => m !== from)!;

    await cluster.beginMigration(slot, to, [moved]);
    const source = on(from);
    await expect(source.get(moved)).rejects.toThrow(/^ASK /);
    expect(await source.get(stayed)).toBe('s');
    expect(await cluster.masterOf(moved)).toBe(from);
    expect(await client.get(moved)).toBe('m');

    await cluster.finishMigration();
    expect(cluster.migrations.size).toBe(0);
    expect(await cluster.masterOf(stayed)).toBe(to);
    expect(await on(to).get(stayed)).toBe('s');
    await expect(source.get(stayed)).rejects.toThrow(/^MOVED /);
    expect(await client.get(stayed)).toBe('s');
  });

  it('kill() takes a whole cluster down, restart() brings it back; stop() leaves no process and no directory', async () => {
    const [a, b] = await startClusters(2, { masters: 1, replicas: 1 });
    const pids = [...a.servers, ...b.servers].map((s) => s.pid as number);
    const dirs = [...a.servers, ...b.servers].map((s) => s.dir);
    expect(pids).toHaveLength(4);
    for (const pid of pids) expect(() => process.kill(pid, 0)).not.toThrow();

    const [masterA] = await a.masters();
    await masterA.admin().set('lost', 'on restart');
    await a.kill();
    for (const s of a.servers) expect(s.alive).toBe(false);
    expect(() => process.kill(pids[0], 0)).toThrow();
    expect(() => process.kill(pids[1], 0)).toThrow();
    expect(existsSync(dirs[0])).toBe(true);
    expect(() => process.kill(pids[2], 0)).not.toThrow();

    // Back on the same ports, settled, and empty.
    await a.restart();
    expect(a.servers.every((s) => s.alive)).toBe(true);
    expect(await a.masters()).toHaveLength(1);
    expect(await a.replicas()).toHaveLength(1);
    expect(await masterA.admin().exists('lost')).toBe(0);
    const pidsA = a.servers.map((s) => s.pid as number);
    pids.push(...pidsA);

    await Promise.all([a.stop(), b.stop()]);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    for (const dir of dirs) expect(existsSync(dir)).toBe(false);
  });

  (SERVERS_DIE_WITH_PARENT ? it : it.skip)(
    "a cluster's servers are killed when the process that started it is killed",
    async () => {
      const script = `
        import(${JSON.stringify(join(process.cwd(), 'scripts/redis-clusters.mjs'))})
          .then(({ startCluster }) => startCluster({ masters: 1, replicas: 1 }))
          .then((c) => { console.log(JSON.stringify(c.servers.map((s) => [s.pid, s.dir]))); setInterval(() => {}, 1000); });
      `;
      const parent = spawn(process.execPath, ['-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const [chunk] = (await once(parent.stdout, 'data')) as [Buffer];
      const started = JSON.parse(chunk.toString()) as [number, string][];
      const pids = started.map(([pid]) => pid);
      expect(pids).toHaveLength(2);
      expect(pids.every(alive)).toBe(true);
      try {
        parent.kill('SIGKILL');
        await once(parent, 'exit');
        const deadline = Date.now() + 5000;
        while (pids.some(alive) && Date.now() < deadline) await sleep(20);
        expect(pids.filter(alive)).toEqual([]);
      } finally {
        // Only if the test failed: stop the servers this test started.
        for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
        // The killed process could not remove its servers' directories.
        for (const [, dir] of started)
          rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

/** Whether a process exists and is not a zombie (reaped by init soon). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
