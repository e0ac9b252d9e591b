import { afterEach, describe, expect, it } from '@jest/globals';
import { Redlock, RedlockConfigError } from 'nestjs-redlock';
import { freePort } from '../../scripts/redis-nodes.mjs';
import { ownNodes } from '../utils/own-nodes.js';

// Health checks while nodes are stopped and frozen: own five servers.
describe('health()', () => {
  const { servers, make } = ownNodes(5, { logger: { warn: () => undefined } });

  afterEach(async () => {
    for (const s of servers) s.thaw();
    await Promise.all(
      servers.filter((s) => s.pid === undefined).map((s) => s.restart()),
    );
  });

  it('all nodes up: healthy, each with its latency', async () => {
    const redlock = make();
    await redlock.ready();
    const health = await redlock.health();
    expect(health).toMatchObject({ healthy: true, up: 5, quorum: 3 });
    expect(health.nodes.map((n) => n.node)).toEqual(
      redlock.nodes.map((n) => n.name),
    );
    for (const node of health.nodes) {
      expect(node.up).toBe(true);
      expect(node.latencyMs).toBeGreaterThanOrEqual(0);
      expect(node.error).toBeUndefined();
    }
  });

  it('two of five stopped: still healthy, the stopped ones down with their error', async () => {
    const redlock = make();
    await redlock.ready();
    await servers[0].kill();
    await servers[3].kill();
    const health = await redlock.health(1000);
    expect(health).toMatchObject({ healthy: true, up: 3 });
    expect(health.nodes.map((n) => n.up)).toEqual([
      false,
      true,
      true,
      false,
      true,
    ]);
    expect(health.nodes[0].error).toEqual(expect.any(String));
    expect(health.nodes[0].latencyMs).toBeUndefined();
  });

  it('a node refusing connections: health() and a failed lock name the cause, not the client giving up', async () => {
    const port = await freePort();
    const redlock = new Redlock({
      clients: [`redis://127.0.0.1:${port}`],
      logger: { warn: () => undefined },
    });
    await redlock.ready(200);
    const health = await redlock.health(500);
    expect(health.nodes[0].error).toBe(
      `connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    const error = (await redlock
      .tryAcquire('refused')
      .catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(error.message).not.toContain('max retries');
    await redlock.quit();
  });

  it('three of five frozen: not healthy, and the check ends at its timeout', async () => {
    const redlock = make();
    await redlock.ready();
    for (const s of servers.slice(2)) s.freeze();
    const started = performance.now();
    const health = await redlock.health(200);
    const elapsed = performance.now() - started;
    expect(health).toMatchObject({ healthy: false, up: 2, quorum: 3 });
    expect(health.nodes.slice(2).map((n) => n.error)).toEqual([
      'timeout',
      'timeout',
      'timeout',
    ]);
    // A plain ping would wait for the frozen nodes as long as they stay
    // frozen; the check gives up at its timeout.
    expect(elapsed).toBeLessThan(2000);
  });

  it('after quit(): every node down as closed, borrowed clients included', async () => {
    const borrowed = servers.map((s) => s.client());
    const redlock = make({ clients: borrowed });
    expect((await redlock.health()).healthy).toBe(true);
    await redlock.quit();
    const health = await redlock.health();
    expect(health).toMatchObject({ healthy: false, up: 0 });
    expect(health.nodes.every((n) => n.error === 'closed')).toBe(true);
    // The borrowed clients are still open: only the closed check says so.
    expect(await borrowed[0].ping()).toBe('PONG');
    await Promise.all(borrowed.map((c) => c.quit()));
  });

  it('rejects a timeout that is not a positive duration, naming it', () => {
    const redlock = make();
    for (const bad of [0, -1, NaN, '100'])
      expect(() => redlock.health(bad as number)).toThrow(RedlockConfigError);
    expect(() => redlock.health(0)).toThrow(/timeoutMs/);
  });
});
