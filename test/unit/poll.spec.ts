import { describe, expect, it } from '@jest/globals';
import { ReplyError } from 'ioredis';
import { poll, type PollOptions } from '../../lib/core/nodes/poll.js';
import type { Redis } from 'ioredis';
import { RedlockNode } from '../../lib/core/nodes/redlock-node.js';

// poll's own bookkeeping, with requests that resolve at once (no Redis:
// nothing here is about locking).
describe('poll', () => {
  // Nodes with no client behind them (borrowed: nothing listens to it).
  const node = (name: string) =>
    new RedlockNode({ status: 'ready' } as Redis, name, false);
  const nodes = ['a', 'b', 'c'].map(node);

  it('counts a reply its judge cannot read as a failed node, without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const ballots = await poll(
        nodes,
        (node) => Promise.resolve(node.name),
        (reply) => {
          if (reply === 'b') throw new Error('unreadable reply');
          return 'granted';
        },
        100,
        () => false,
      );
      expect(ballots.map((b) => b.outcome)).toEqual([
        'granted',
        'error',
        'granted',
      ]);
      expect(ballots[1].error).toBe('unreadable reply');
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  /**
   * A poll on three nodes whose third never answers, while other polls
   * hear `error` from that node every 10 ms: how long the first poll takes
   * to give the third node up (node timeout 100 ms: up to 20 of them for
   * a node that is busy, not down).
   */
  const settleWhileFailing = async (
    error: () => Error,
    options?: PollOptions,
  ) => {
    const mute = ['a', 'b', 'c'].map(node);
    const start = performance.now();
    const pending = poll(
      mute,
      (node) =>
        node.name === 'c' ? new Promise(() => undefined) : Promise.resolve(1),
      () => 'busy',
      100,
      () => false,
      options,
    );
    let settled = false;
    void pending.then(() => (settled = true));
    while (!settled && performance.now() - start < 3000) {
      await poll(
        mute,
        (node) =>
          node.name === 'c' ? Promise.reject(error()) : Promise.resolve(1),
        () => 'busy',
        100,
        () => false,
      );
      await new Promise((r) => setTimeout(r, 10));
    }
    const ballots = await pending;
    expect(ballots[2].outcome).toBe('timeout');
    return performance.now() - start;
  };

  it("gives up a node that answers nothing within two node timeouts, whatever the client's own errors for it", async () => {
    // A command timeout or a closed connection is not a sign of life: two
    // node timeouts (200 ms), against 20 (2 s) for a busy node below; the
    // margin is for a busy machine's late timers.
    expect(
      await settleWhileFailing(() => new Error('Command timed out')),
    ).toBeLessThan(1000);
  });

  it('waits on for a node that keeps sending error replies (busy, not down)', async () => {
    expect(
      await settleWhileFailing(
        () => new (ReplyError as new (message: string) => Error)('BUSY'),
      ),
    ).toBeGreaterThan(1500);
  });

  it('stops waiting for a busy node at its limit (a lease past which no answer helps)', async () => {
    // Busy as above, but an acquire whose lease ends in 600 ms has no use
    // for answers after that: the poll settles by then, not 20 node
    // timeouts (2 s) later.
    const took = await settleWhileFailing(
      () => new (ReplyError as new (message: string) => Error)('BUSY'),
      { limitMs: 600 },
    );
    expect(took).toBeGreaterThanOrEqual(590);
    expect(took).toBeLessThan(1700);
  });
});
