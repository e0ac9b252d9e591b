import {
  afterAll,
  afterEach,
  beforeAll,
  describe,
  expect,
  it,
} from '@jest/globals';
import {
  fenceCounterKey,
  LockNotAcquiredError,
  Redlock,
  type Lock,
} from 'nestjs-redlock';
import { listenDelayed } from '../../scripts/latency-proxy.mjs';
import { startServers, type RedisServer } from '../../scripts/redis-nodes.mjs';

// A node that restarts without persistence has lost the keys it held
// (SPEC.md, "crash and restart without fsync"). These tests restart nodes
// empty while a lock is held through them: own five servers, persistence
// off.
describe('restartQuarantine: a node that restarted does not count until it has been up that long', () => {
  const LEASE = 2000;
  const QUARANTINE = 2500;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let servers: RedisServer[];
  const redlocks: Redlock[] = [];
  const make = (restartQuarantine = 0) => {
    const redlock = new Redlock({
      clients: servers.map((s) => s.url),
      keyPrefix: 'q:',
      metaPrefix: 'meta:',
      ttl: LEASE,
      // Generous: a loaded machine must not turn a slow answer into a
      // timeout the tests would read as something else.
      nodeTimeout: 500,
      restartQuarantine,
      logger: { warn: () => undefined },
    });
    redlocks.push(redlock);
    return redlock;
  };
  /** Until every node is connected and, with a quarantine, its uptime read (ready() waits for a quorum). */
  const allReady = async (redlock: Redlock) => {
    await redlock.ready();
    const up = () =>
      redlock.nodes.every(
        (n, i) => n.client.status === 'ready' && redlock.standing.checked(i),
      );
    for (let i = 0; i < 300 && !up(); i++) await sleep(10);
  };
  /** The outcome of one attempt: the lock, or the votes of its refusal. */
  const attempt = (redlock: Redlock, resource: string) =>
    redlock
      .tryAcquire(resource)
      .catch((e: unknown) => e as LockNotAcquiredError);

  beforeAll(async () => {
    servers = await startServers(5);
    // Every node older than the quarantine before the tests restart some
    // (the library takes 1 s off the uptime a node reports: see there).
    await sleep(QUARANTINE + 1500);
  });
  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((r) => r.quit()));
    await Promise.all(
      servers.filter((s) => s.pid === undefined).map((s) => s.restart()),
    );
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  /**
   * A holds `resource` on nodes 0-2 only (3 and 4 were down when it
   * asked); then 3 and 4 come back and node 2 restarts, all empty. Three
   * nodes now lack A's key: a majority for anyone who counts them.
   */
  async function holdThroughRestart(resource: string): Promise<Lock> {
    await Promise.all([servers[3].kill(), servers[4].kill()]);
    const a = await make().acquire(resource);
    await Promise.all([
      servers[3].restart(),
      servers[4].restart(),
      servers[2].restart(),
    ]);
    return a;
  }

  // First: it needs every node but the restarted one older than the
  // quarantine, and the tests below restart nodes.
  it("a fencing round does not count a quarantined node's store: the tokens stand only once a counted node stored them", async () => {
    // Node 2 is 200 ms away each way, node 3 is down and node 4 has just
    // restarted: nodes 0-2 make the quorum, and node 4 stores tokens
    // quickly but does not count.
    const far = await listenDelayed(servers[2].port, 200);
    try {
      await servers[3].kill();
      await servers[4].restart();
      const c = new Redlock({
        clients: [
          servers[0].url,
          servers[1].url,
          far.url,
          servers[3].url,
          servers[4].url,
        ],
        keyPrefix: 'q:',
        metaPrefix: 'meta:',
        nodeTimeout: 1000,
        ttl: 5000,
        restartQuarantine: QUARANTINE,
        fencing: true,
        logger: { warn: () => undefined },
      });
      redlocks.push(c);
      await c.ready();
      const lock = await c.acquire('fenced');
      // Counting node 4, the round would have stood with nodes 0, 1 and 4
      // before node 2's answer came back; node 2 would not hold the token
      // yet.
      const admin = servers[2].client();
      const stored = await admin.get(fenceCounterKey('meta:', 'q:fenced'));
      await admin.quit();
      expect(stored).toBe(lock.fencingToken);
      await lock.release();
    } finally {
      await far.close();
    }
  });

  // Second, for the same reason.
  it("a key given on release by quarantined nodes does not count toward the waiter's quorum", async () => {
    await Promise.all([servers[3].restart(), servers[4].restart()]);
    const a = make();
    await allReady(a);
    const held = await a.acquire('handed');
    const c = make(QUARANTINE);
    await allReady(c);
    // c waits, queued on every node; then node 2 goes down, and the
    // release gives the key to c on nodes 0, 1, 3 and 4: two of them
    // count. Counting the restarted 3 and 4, c would hold the lock.
    const waiting = c
      .acquire('handed', { waitTimeout: 800 })
      .catch((e: unknown) => e);
    await sleep(100);
    await servers[2].kill();
    await held.release();
    const outcome = await waiting;
    expect(outcome).toBeInstanceOf(LockNotAcquiredError);
  });

  it('without it (the default), a second holder gets the lock while the first still holds it: the hazard', async () => {
    const a = await holdThroughRestart('hazard');
    const b = make();
    await allReady(b);
    const second = await attempt(b, 'hazard');
    expect(second).not.toBeInstanceOf(LockNotAcquiredError);
    expect(a.isHeld).toBe(true);
    await (second as Lock).release();
    await a.release();
  });

  it('with it, the restarted nodes do not count: refused while the first holds it, and nothing of the attempt is left', async () => {
    const a = await holdThroughRestart('guarded');
    const c = make(QUARANTINE);
    await allReady(c);
    const refused = await attempt(c, 'guarded');
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    // The restarted nodes granted, but none counted. The attempt gave up
    // as soon as no quorum was left, after three answers (the two that
    // were late show as pending): at least one of them was a restarted
    // node's, as only nodes 0 and 1 hold A's key.
    const outcomes = (refused as LockNotAcquiredError).nodes.map(
      (n) => n.outcome,
    );
    expect(outcomes).toContain('quarantined');
    expect(outcomes).not.toContain('granted');
    for (const outcome of outcomes.slice(0, 2))
      expect(['busy', 'pending']).toContain(outcome);
    expect(a.isHeld).toBe(true);
    // Its health check says so too: five nodes up, two that count.
    const health = await c.health(1000);
    expect(health).toMatchObject({ healthy: false, up: 5 });
    expect(health.nodes.map((n) => n.quarantined ?? false)).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
    // The quarantined grants were taken back: only A's keys are left.
    const values = await Promise.all(
      servers.map(async (s) => {
        const client = s.client();
        const value = await client.get('q:guarded');
        await client.quit();
        return value;
      }),
    );
    expect(values).toEqual([a.value, a.value, null, null, null]);
    await a.release();
    // Once the restarted nodes have been up for the quarantine, they count.
    await sleep(QUARANTINE);
    const later = await attempt(c, 'guarded');
    expect(later).not.toBeInstanceOf(LockNotAcquiredError);
    await (later as Lock).release();
  });

  it('an instance that was connected sees the restart when it reconnects', async () => {
    const c = make(QUARANTINE);
    const plain = make();
    await Promise.all([allReady(c), allReady(plain)]);
    await Promise.all([servers[3].kill(), servers[4].kill()]);
    await servers[2].restart();
    // Both saw the connection drop while the server restarted; wait until
    // they are back, and c has read node 2's uptime again.
    for (
      let i = 0;
      i < 300 &&
      !(c.standing.checked(2) && plain.nodes[2].client.status === 'ready');
      i++
    )
      await sleep(10);
    const refused = await attempt(c, 'reconnected');
    expect(refused).toBeInstanceOf(LockNotAcquiredError);
    expect((refused as LockNotAcquiredError).nodes[2].outcome).toBe(
      'quarantined',
    );
    // Counting node 2 as it stands, the other instance gets the lock (3 of 5).
    const granted = await attempt(plain, 'reconnected');
    expect(granted).not.toBeInstanceOf(LockNotAcquiredError);
    await (granted as Lock).release();
  });
});
