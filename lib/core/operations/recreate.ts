import type { RedlockContext } from '../context.js';
import type { Lock } from '../lock.js';
import type { Tally } from '../nodes/poll.js';
import { RECREATE_SCRIPT } from '../scripts/recreate.script.js';
import { withTimeout } from '../util/timeout.js';

/** A lock to put back on one node, with the lease its extension set. */
export interface Recreation {
  readonly lock: Lock;
  readonly ttl: number;
}

/**
 * The quorum rule of an extension with `recreateOnExtend`: it waits for
 * every node's answer (the put-back round needs to know which nodes
 * refused), or settles as soon as a quorum is out of reach.
 */
export function untilAllAnswered(quorum: number): (tally: Tally) => boolean {
  return (t) => t.pending === 0 || t.granted + t.pending < quorum;
}

/**
 * Tries a put-back again this many times, a little later each time, where
 * another value sat: typically a waiter's attempt that the node granted and
 * that the waiter takes back a round trip later, as the others refused it.
 */
const RETRIES = 2;
const RETRY_DELAY_MS = 10;

/**
 * The second round of an extension with `recreateOnExtend`: for each node
 * (by index), the locks it refused, to put back with `RECREATE_SCRIPT`.
 * Called only for locks whose extension just stood (a quorum of the other
 * nodes extended them within the validity): then the lock is ours, and a
 * key put back with NX, where nothing sits, takes nothing from anyone. The
 * put-back keys never count toward that extension. A lock released, lost
 * or past its validity by the time its request leaves is skipped; a
 * release that follows is sent on the same connection after it, so it
 * deletes what was put back. Failures are ignored: the next extension
 * tries again. Each try is bounded by `timeoutMs` per node.
 */
export async function recreateMissing(
  ctx: RedlockContext,
  perNode: ReadonlyMap<number, readonly Recreation[]>,
  timeoutMs: number,
): Promise<void> {
  await Promise.all(
    [...perNode].map(async ([i, recreations]) => {
      let left = recreations;
      for (let k = 0; left.length && k <= RETRIES; k++) {
        if (k) await sleep(RETRY_DELAY_MS * k);
        left = await putBack(ctx, i, left, timeoutMs);
      }
    }),
  );
}

/** One try on node `i`; resolves with the locks another value kept out. */
async function putBack(
  ctx: RedlockContext,
  i: number,
  recreations: readonly Recreation[],
  timeoutMs: number,
): Promise<readonly Recreation[]> {
  const now = ctx.clock.now();
  const live = recreations.filter(
    ({ lock }) => !lock.isReleased && !lock.isLost && now < lock.deadline,
  );
  if (!live.length) return [];
  const replies = await withTimeout(
    ctx.nodes[i].runPipeline(
      RECREATE_SCRIPT,
      live.map(({ lock, ttl }) => ({
        keys: lock.keys,
        args: [lock.value, Math.ceil(ttl)],
      })),
    ),
    timeoutMs,
  ).catch(() => undefined);
  return replies ? live.filter((_, j) => replies[j] === 0) : [];
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, ms));
