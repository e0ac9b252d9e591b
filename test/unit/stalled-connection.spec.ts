import { EventEmitter } from 'node:events';
import { describe, expect, it, jest } from '@jest/globals';
import type { Redis } from 'ioredis';
import { RedlockNode } from '../../lib/core/nodes/redlock-node.js';
import {
  reconnectIfStalled,
  stallAfter,
} from '../../lib/core/nodes/stalled-connection.js';

// The bookkeeping that decides when a node's connection counts as stalled
// (no Redis: the recovery itself is test/core/partition-recovery.spec.ts,
// with nodes cut off in network namespaces).
describe('reconnectIfStalled', () => {
  const client = () => {
    const reset = jest.fn();
    const fake = Object.assign(new EventEmitter(), {
      status: 'ready',
      stream: { resetAndDestroy: reset, destroy: jest.fn() },
    });
    return { fake: fake as unknown as Redis, reset };
  };
  // A poll's busy-wait limit at a 100 ms node timeout.
  const limit = 20 * 100;
  const after = stallAfter(limit);

  it('drops the connection of a node silent past the threshold while another answered later requests', () => {
    const a = client();
    const silent = new RedlockNode(a.fake, 'a', true);
    const other = new RedlockNode(client().fake, 'b', true);
    silent.sent(0);
    other.sent(0);
    other.answered(after / 2);
    expect(reconnectIfStalled(silent, [silent, other], limit, after - 1)).toBe(
      false,
    );
    expect(reconnectIfStalled(silent, [silent, other], limit, after)).toBe(
      true,
    );
    expect(a.reset).toHaveBeenCalledTimes(1);
    // Once: its silence starts over with the next request.
    expect(reconnectIfStalled(silent, [silent, other], limit, 2 * after)).toBe(
      false,
    );
  });

  it('leaves it when the others answered only requests sent about as early (this process paused)', () => {
    const a = client();
    const silent = new RedlockNode(a.fake, 'a', true);
    const other = new RedlockNode(client().fake, 'b', true);
    silent.sent(0);
    other.answered(after / 2 - 1);
    expect(reconnectIfStalled(silent, [silent, other], limit, 10 * after)).toBe(
      false,
    );
    expect(a.reset).not.toHaveBeenCalled();
  });

  it('leaves a node that answered, and never drops a borrowed client', () => {
    const a = client();
    const answering = new RedlockNode(a.fake, 'a', true);
    const other = new RedlockNode(client().fake, 'b', true);
    answering.sent(0);
    answering.answered(0);
    other.answered(after);
    expect(
      reconnectIfStalled(answering, [answering, other], limit, 2 * after),
    ).toBe(false);
    const b = client();
    const borrowed = new RedlockNode(b.fake, 'c', false);
    borrowed.sent(0);
    expect(
      reconnectIfStalled(borrowed, [borrowed, other], limit, 2 * after),
    ).toBe(false);
    expect(a.reset).not.toHaveBeenCalled();
    expect(b.reset).not.toHaveBeenCalled();
  });

  it('waits at least as long as a poll waits for a busy node', () => {
    expect(stallAfter(20 * 50)).toBe(2000);
    expect(stallAfter(20 * 900)).toBe(18_000);
  });
});
