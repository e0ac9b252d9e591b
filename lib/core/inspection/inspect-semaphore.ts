import type { RedlockContext } from '../context.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import { poll, type Ballot } from '../nodes/poll.js';
import {
  holderOf,
  type LockInspection,
  type NodeInspection,
} from '../operations/inspect.js';
import { holdersKey } from '../permits/permit-scripts.js';
import { permitKey, permitResource } from '../permits/permit-slots.js';
import { INSPECT_PERMITS_SCRIPT } from '../scripts/inspect-permits.script.js';
import type {
  SemaphoreInspection,
  SemaphoreNodeInspection,
} from './inspect-options.js';
import { Counts } from './counts.js';

/** One node's reply to the permits inspect script. */
type Reply = [string | null, number, number, string | null, unknown[]];

const MARK = /^~permits:(\d+)$/;

/**
 * A semaphore's permit slots, each read as a mutex's key is (its holder
 * and lease per node), with the resource key's mark, its live holders and
 * fencing counter: one script run per node (every key of the resource is
 * in its hash slot on a Cluster). `permits` slots are read (1024 at most).
 */
export async function inspectSemaphore(
  ctx: RedlockContext,
  resource: string,
  permits: number,
  timeoutMs: number,
): Promise<SemaphoreInspection> {
  const { metaPrefix } = ctx.config;
  const key = ctx.config.keyOf(resource);
  const slotKeys = Array.from({ length: permits }, (_, i) => permitKey(key, i));
  const ballots = await poll(
    ctx.nodes,
    {
      script: INSPECT_PERMITS_SCRIPT,
      keys: [
        key,
        holdersKey(metaPrefix, key),
        fenceCounterKey(metaPrefix, key),
        ...slotKeys,
      ],
      args: [],
    },
    () => 'granted',
    timeoutMs,
    () => false,
    { limitMs: timeoutMs },
  );
  const marks = new Counts();
  const nodes = ballots.map((ballot): SemaphoreNodeInspection => {
    if (ballot.outcome !== 'granted')
      return {
        node: ballot.node,
        up: false,
        error: ballot.error ?? ballot.outcome,
      };
    const [mark, , holders, counter] = ballot.reply as Reply;
    const count = mark === null ? undefined : MARK.exec(mark)?.[1];
    if (count !== undefined) marks.add(count);
    return {
      node: ballot.node,
      up: true,
      ...(count === undefined ? {} : { permits: Number(count) }),
      holders: Number(holders),
      ...(counter === null ? {} : { fencingToken: String(counter) }),
    };
  });
  const slots = slotKeys.map((slotKey, i) =>
    slotInspection(ctx, permitResource(resource, i), slotKey, i, ballots),
  );
  const inUse = marks.atLeast(ctx.quorum)[0];
  return {
    resource,
    key,
    permits,
    ...(inUse === undefined ? {} : { inUse: Number(inUse) }),
    held: slots.filter((s) => s.held).length,
    heldHere: slots.filter((s) => s.holder === 'this-instance').length,
    slots,
    nodes,
  };
}

/** Slot `i` as each node holds it, read as a mutex's key. */
function slotInspection(
  ctx: RedlockContext,
  resource: string,
  key: string,
  i: number,
  ballots: readonly Ballot[],
): LockInspection {
  const values = new Counts();
  const nodes = ballots.map((ballot): NodeInspection => {
    if (ballot.outcome !== 'granted')
      return {
        node: ballot.node,
        up: false,
        error: ballot.error ?? ballot.outcome,
      };
    const slots = (ballot.reply as Reply)[4];
    const value = slots[2 * i] as string | null;
    if (value === null) return { node: ballot.node, up: true, exists: false };
    values.add(value);
    return {
      node: ballot.node,
      up: true,
      exists: true,
      ttlMs: Number(slots[2 * i + 1]),
      holder: holderOf(ctx, value),
    };
  });
  const held = values.atLeast(ctx.quorum)[0];
  return held === undefined
    ? { resource, key, held: false, nodes }
    : { resource, key, held: true, holder: holderOf(ctx, held), nodes };
}
