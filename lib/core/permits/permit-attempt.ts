import type { LockFailureReason } from '../../errors/lock-not-acquired.error.js';
import type { RedlockContext } from '../context.js';
import { issueFencingTokens } from '../fencing/issue-tokens.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import { createLock, type Lock, type LockOperations } from '../lock.js';
import { poll, type Ballot, type Tally } from '../nodes/poll.js';
import type { AcquireCall } from '../operations/acquire-call.js';
import { failureReason, shortestHolderTtl } from '../operations/attempt.js';
import { PERMIT_ACQUIRE_SCRIPT, permitsMark } from '../scripts/index.js';
import {
  sendScriptedRelease,
  type ShapeScripts,
} from '../shapes/scripted-lock-ops.js';
import { permitsShape } from '../shapes/shape-book.js';
import { shapeConflict } from '../shapes/shape-errors.js';
import { AttemptEvent } from '../shapes/shape-events.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { randomValue } from '../util/lock-value.js';
import { holdersKey } from './permit-scripts.js';
import { permitKey, permitResource } from './permit-slots.js';

/** The outcome of one attempt on permit slots. */
export interface PermitAttempt {
  readonly lock?: Lock;
  /** The slot of each resource the lock holds. */
  readonly slots?: readonly number[];
  readonly reason?: LockFailureReason;
  readonly ballots: Ballot[];
  /** The shortest lease a refusing node reported for the candidates. */
  readonly holderTtl?: number;
}

/**
 * One attempt on every node at once for a permit of each resource of
 * `call`: `candidates[j]` are the slots of resource j a node may take, in
 * order (several only for a single resource; every list as long). Each
 * node takes, per resource, the first candidate free there. Held when a
 * quorum of nodes took the same slot(s) within the lease less the drift
 * (with fencing, then a token round per resource), as a mutex's attempt is;
 * what nodes took otherwise is taken back. Rejects with `LockShapeError`
 * when a node reports the resource held with another shape.
 */
export async function attemptPermits(
  ctx: RedlockContext,
  ops: LockOperations,
  scripts: ShapeScripts,
  call: AcquireCall,
  permits: number,
  candidates: readonly (readonly number[])[],
): Promise<PermitAttempt> {
  const { timing, keys } = call;
  const meta = ctx.config.metaPrefix;
  const start = ctx.clock.now();
  const value = randomValue();
  const c = candidates[0].length;
  // Column t of the candidate keys: candidate t of each resource.
  const tried: string[] = [];
  for (let t = 0; t < c; t++)
    keys.forEach((key, j) => tried.push(permitKey(key, candidates[j][t])));
  const counters = call.fencing
    ? keys.map((k) => fenceCounterKey(meta, k))
    : [];
  // How many nodes took each candidate (1-based, as the script answers).
  const took = new Array<number>(c + 1).fill(0);
  let conflict: unknown[] | undefined;
  const event = AttemptEvent.open(ctx);
  const ballots = await poll(
    ctx.nodes,
    {
      script: PERMIT_ACQUIRE_SCRIPT,
      keys: [
        ...keys,
        ...keys.map((k) => holdersKey(meta, k)),
        ...tried,
        ...counters,
      ],
      args: [
        value,
        Math.ceil(timing.ttl),
        permitsMark(permits),
        call.fencing ? 1 : 0,
        c,
      ],
    },
    (reply, i) => {
      if (!Array.isArray(reply)) return 'busy';
      if (Number(reply[0]) === -3) conflict = reply;
      if (Number(reply[0]) !== 1) return 'busy';
      const judged = ctx.standing.grant(i, keys);
      if (judged === 'granted') took[Number(reply[1])]++;
      return judged;
    },
    timing.nodeTimeout,
    // Decided once a quorum took one candidate, or none still can.
    (tally: Tally) =>
      Math.max(...took) >= ctx.quorum ||
      tally.pending === 0 ||
      Math.max(...took) + tally.pending < ctx.quorum,
    { limitMs: timing.ttl - timing.drift, answered: event?.answered },
  );
  event?.publish(call.resources, value, ballots, { permits });
  const t = took.indexOf(Math.max(...took));
  const held = took[t] >= ctx.quorum;
  const slots = candidates.map((list) => list[t - 1]);
  const valid = timing.ttl - (ctx.clock.now() - start) - timing.drift > 0;
  if (held && valid) {
    const lock = createLock(ops, {
      resources: call.resources.map((r, j) => permitResource(r, slots[j])),
      keys: keys.map((key, j) => permitKey(key, slots[j])),
      value,
      ttl: timing.ttl,
      deadline: start + timing.ttl - timing.drift,
      shape: { permits },
    });
    // Nodes that took another candidate, or may have: give it back.
    const others = tried.filter((key) => !lock.keys.includes(key));
    if (others.length && ballots.some((b) => b.outcome !== 'busy'))
      void awaitedByQuit(
        ctx,
        sendScriptedRelease(ctx, scripts, others, value, true),
      );
    if (!call.fencing) return { lock, slots, ballots };
    const failure = await issueFencingTokens(
      ctx,
      lock,
      counters,
      ballots.map((b, i) =>
        b.outcome === 'granted' && Number((b.reply as unknown[])[1]) !== t
          ? { node: ctx.nodes[i].name, outcome: 'busy' as const }
          : b,
      ),
      timing.nodeTimeout,
    );
    if (!failure) return { lock, slots, ballots };
    return takeBack(ctx, scripts, call, start, tried, value, ballots, failure);
  }
  const result = await takeBack(
    ctx,
    scripts,
    call,
    start,
    tried,
    value,
    ballots,
    held ? 'expired' : undefined,
  );
  if (conflict)
    throw shapeConflict(call.resources, conflict, permitsShape(permits));
  return result;
}

/** A failed attempt: takes back what any node took (lost replies included). */
async function takeBack(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  call: AcquireCall,
  start: number,
  tried: readonly string[],
  value: string,
  ballots: Ballot[],
  failure: LockFailureReason | undefined,
): Promise<PermitAttempt> {
  if (ballots.some((b) => b.outcome !== 'busy'))
    await awaitedByQuit(
      ctx,
      sendScriptedRelease(
        ctx,
        scripts,
        tried,
        value,
        true,
        start + call.timing.ttl - ctx.clock.now(),
      ),
    );
  return {
    ballots,
    // Held but too late is passed as `failure` ('expired'): the grants
    // here may name different slots, so their count says nothing.
    reason: failure ?? failureReason(ctx.quorum, 0, ballots),
    holderTtl: shortestHolderTtl(ballots),
  };
}
