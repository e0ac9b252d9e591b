import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { ClusterNode } from '../cluster/cluster-node.js';
import { slotOf } from '../cluster/key-slot.js';
import type { RedlockContext } from '../context.js';
import type { AcquireCall } from '../operations/acquire-call.js';

/**
 * Refuses a semaphore or read/write lock over resources in several hash
 * slots when a node is a Redis Cluster: their scripts run in one slot (a
 * mutex over several slots has a take-back across slots that these do
 * not). Resources tagged alike (`{order:42}:a`, `{order:42}:b`) share one.
 */
export function checkOneSlot(ctx: RedlockContext, call: AcquireCall): void {
  if (call.keys.length < 2) return;
  if (!ctx.nodes.some((node) => node instanceof ClusterNode)) return;
  const first = slotOf(call.keys[0]);
  if (call.keys.every((key) => slotOf(key) === first)) return;
  throw new RedlockConfigError(
    'resources',
    `must share one hash slot for a semaphore or read/write lock on a Redis Cluster node: tag them alike ({tag}), got ${call.resources.map((r) => JSON.stringify(r)).join(', ')}`,
  );
}
