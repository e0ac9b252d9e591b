import { afterAll, describe, expect, it } from '@jest/globals';
import { Redlock } from 'nestjs-redlock';
import {
  closeAll,
  flushed,
  inspect,
  quorumUrls,
  uniquePrefix,
} from '../utils/nodes.js';

// FAULTS.md S3 (redsync's clogPools): foreign values on a subset of the
// nodes, for every subset of the five.
describe('partial acquire cleanup over every subset of clogged nodes', () => {
  const prefix = uniquePrefix('clog');
  const redlock = new Redlock({ clients: quorumUrls(), keyPrefix: prefix });
  const nodes = inspect(quorumUrls());
  afterAll(async () => {
    await redlock.quit();
    await closeAll(nodes);
  });

  it('acquires iff at least a quorum is free, and a failure leaves none of our values behind', async () => {
    expect(await redlock.ready()).toBe(true); // single attempts below: start connected
    const wrong: string[] = [];
    for (let mask = 0; mask < 32; mask++) {
      const key = `${prefix}r${mask}`;
      const clogged = nodes.filter((_, i) => mask & (1 << i));
      await Promise.all(
        clogged.map((n) => n.set(key, 'foreign', 'PX', 10_000)),
      );
      const free = nodes.length - clogged.length;
      const lock = await redlock.tryAcquire(`r${mask}`);
      if ((lock !== null) !== free >= 3)
        wrong.push(`mask ${mask}: free ${free}, got ${lock ? 'lock' : 'null'}`);
      if (lock) await lock.release();
      // A release settles at a quorum: let the slowest node run it too.
      await flushed(redlock);
      // Whatever the outcome, no node keeps a value of ours: clogged nodes
      // still hold the foreign one, the others hold nothing.
      const values = await Promise.all(nodes.map((n) => n.get(key)));
      values.forEach((v, i) =>
        expect(v).toBe(mask & (1 << i) ? 'foreign' : null),
      );
    }
    expect(wrong).toEqual([]);
  });
});

// FAULTS.md W3: many acquire-release cycles in concurrent flows leave no key.
describe('release/renew race', () => {
  const prefix = uniquePrefix('w3');
  const redlock = new Redlock({
    clients: quorumUrls(),
    keyPrefix: prefix,
    ttl: 300,
  });
  const nodes = inspect(quorumUrls());
  afterAll(async () => {
    await redlock.quit();
    await closeAll(nodes);
  });

  it('2,000 run() cycles in 8 flows leave no lock key and no live watchdog', async () => {
    let sections = 0;
    await Promise.all(
      Array.from({ length: 8 }, (_, flow) =>
        (async () => {
          for (let i = 0; i < 250; i++) {
            await redlock.using(`flow:${flow}:${i % 5}`, () => {
              sections++;
            });
          }
        })(),
      ),
    );
    expect(sections).toBe(2000);
    // Released, not merely expired: checked well inside the 300 ms lease,
    // once each node ran what redlock sent it (a PING after it).
    await flushed(redlock);
    for (const node of nodes) expect(await node.keys(`${prefix}*`)).toEqual([]);
    // No watchdog left, and none ticking (an extension never re-creates a
    // deleted key, so the keys alone could not tell).
    expect(redlock.keepAlive.size).toBe(0);
    const ticks = redlock.keepAlive.ticks;
    await new Promise((r) => setTimeout(r, 400));
    expect(redlock.keepAlive.ticks).toBe(ticks);
  });
});
