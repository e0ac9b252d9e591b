import { describe, expect, it } from '@jest/globals';
import { poll } from '../../lib/core/poll.js';
import type { RedlockNode } from '../../lib/core/redlock-node.js';

// poll's own bookkeeping, with requests that resolve at once (no Redis:
// nothing here is about locking).
describe('poll', () => {
  const nodes = ['a', 'b', 'c'].map((name) => ({ name }) as RedlockNode);

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
});
