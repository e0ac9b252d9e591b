import type { LockFailureReason } from '../../errors/lock-not-acquired.error.js';
import type { RedlockContext } from '../context.js';
import { issueFencingTokens } from '../fencing/issue-tokens.js';
import { fenceCounterKey } from '../fencing/tokens.js';
import { createLock, type Lock, type LockOperations } from '../lock.js';
import { poll, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import type { AcquireCall } from '../operations/acquire-call.js';
import {
  acquireReply,
  PERMIT_ACQUIRE_SCRIPT,
  permitsMark,
} from '../scripts/index.js';
import {
  sendScriptedRelease,
  type ShapeScripts,
} from '../shapes/scripted-lock-ops.js';
import { permitsShape } from '../shapes/shape-book.js';
import { shapedLocks } from '../shapes/shaped-locks.js';
import { shapeConflict } from '../shapes/shape-conflict.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { randomValue } from '../util/lock-value.js';
import { permitScriptKeys } from './permit-scripts.js';
import { permitKey, permitResource } from './permit-slots.js';

/** The outcome of one attempt on permit slots. */
export interface PermitAttempt {
  readonly lock?: Lock;
  readonly reason?: LockFailureReason;
  readonly ballots: Ballot[];
  /** The shortest lease a refusing node reported for the slot. */
  readonly holderTtl?: number;
}

/**
 * One attempt on slot `slots[j]` of each resource of `call`, on every node
 * at once: held as a mutex's attempt is (a quorum of grants within the
 * lease less the drift; with fencing, a token round per resource).
 * Otherwise what was granted is taken back. Rejects with `LockShapeError`
 * when a node reports the resource held with another shape.
 */
export async function attemptPermits(
  ctx: RedlockContext,
  ops: LockOperations,
  scripts: ShapeScripts,
  call: AcquireCall,
  permits: number,
  slots: readonly number[],
): Promise<PermitAttempt> {
  const { timing } = call;
  const start = ctx.clock.now();
  const ttl = Math.ceil(timing.ttl);
  const value = randomValue();
  const slotKeys = call.keys.map((key, j) => permitKey(key, slots[j]));
  const counters = call.fencing
    ? call.keys.map((key) => fenceCounterKey(ctx.config.metaPrefix, key))
    : [];
  let conflict: unknown[] | undefined;
  const ballots = await poll(
    ctx.nodes,
    {
      script: PERMIT_ACQUIRE_SCRIPT,
      keys: [...permitScriptKeys(ctx.config.metaPrefix, slotKeys), ...counters],
      args: [value, ttl, permitsMark(permits), call.fencing ? 1 : 0],
    },
    (reply, i) => {
      if (Array.isArray(reply) && Number(reply[0]) === -3) conflict = reply;
      const granted =
        Array.isArray(reply) && Number(reply[0]) === 1
          ? true
          : !Array.isArray(reply) && Number(reply) === 1;
      return granted ? ctx.standing.grant(i, slotKeys) : 'busy';
    },
    timing.nodeTimeout,
    ctx.isDecided,
    { limitMs: timing.ttl - timing.drift },
  );
  const granted = countGranted(ballots);
  if (
    granted >= ctx.quorum &&
    timing.ttl - (ctx.clock.now() - start) - timing.drift > 0
  ) {
    const lock = createLock(ops, {
      resources: call.resources.map((r, j) => permitResource(r, slots[j])),
      keys: slotKeys,
      value,
      ttl: timing.ttl,
      deadline: start + timing.ttl - timing.drift,
    });
    shapedLocks.set(lock, { permits });
    if (!call.fencing) return { lock, ballots };
    const failure = await issueFencingTokens(
      ctx,
      lock,
      counters,
      ballots,
      timing.nodeTimeout,
    );
    if (!failure) return { lock, ballots };
    return takeBack(
      ctx,
      scripts,
      call,
      start,
      slotKeys,
      value,
      ballots,
      failure,
    );
  }
  const result = await takeBack(
    ctx,
    scripts,
    call,
    start,
    slotKeys,
    value,
    ballots,
    undefined,
  );
  if (conflict)
    throw shapeConflict(call.resources, conflict, permitsShape(permits));
  return result;
}

/** A failed attempt: takes back every grant (lost replies included). */
async function takeBack(
  ctx: RedlockContext,
  scripts: ShapeScripts,
  call: AcquireCall,
  start: number,
  slotKeys: readonly string[],
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
        slotKeys,
        value,
        false,
        start + call.timing.ttl - ctx.clock.now(),
      ),
    );
  const granted = countGranted(ballots);
  const answered = ballots.filter(
    (b) => b.outcome === 'granted' || b.outcome === 'busy',
  ).length;
  const ttls = ballots
    .filter((b) => b.outcome === 'busy' && !Array.isArray(b.reply))
    .map((b) => acquireReply(b.reply).holderTtl)
    .filter((t) => t !== undefined);
  return {
    ballots,
    reason:
      failure ??
      (granted >= ctx.quorum
        ? 'expired'
        : answered < ctx.quorum
          ? 'unreachable'
          : 'busy'),
    holderTtl: ttls.length ? Math.min(...ttls) : undefined,
  };
}
