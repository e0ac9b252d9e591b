import type { LockFailureReason } from '../../errors/lock-not-acquired.error.js';
import type { LockMode } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import { createLock, type Lock, type LockOperations } from '../lock.js';
import { poll, type Ballot } from '../nodes/poll.js';
import { countGranted } from '../nodes/quorum.js';
import type { AcquireCall } from '../operations/acquire-call.js';
import { RW_ACQUIRE_SCRIPT } from '../scripts/index.js';
import { failureReason, shortestHolderTtl } from '../operations/attempt.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { rwKeys } from './rw-keys.js';
import {
  sendScriptedRelease,
  type ShapeScripts,
} from '../shapes/scripted-lock-ops.js';
import { shapeConflict } from '../shapes/shape-errors.js';
import { AttemptEvent } from '../shapes/shape-events.js';
import type { RwWakeList } from './rw-wake-list.js';

/** The outcome of one read or write attempt. */
export interface RwAttempt {
  readonly lock?: Lock;
  readonly reason?: LockFailureReason;
  readonly ballots: Ballot[];
  /** The shortest lease a refusing node reported (a writer's, or its last reader's). */
  readonly holderTtl?: number;
}

/**
 * One read or write attempt on every node at once, held as a mutex's is:
 * a quorum of grants within the lease less the drift. Otherwise what was
 * granted is taken back (a writer keeps its intent: it waits on). A node
 * that refuses it puts `wake`'s entry on its wake list.
 */
export async function attemptRw(
  ctx: RedlockContext,
  ops: LockOperations,
  scripts: ShapeScripts,
  call: AcquireCall,
  mode: LockMode,
  value: string,
  intentLife: number,
  wake: RwWakeList,
): Promise<RwAttempt> {
  const { timing, keys } = call;
  const start = ctx.clock.now();
  const ttl = Math.ceil(timing.ttl);
  let conflict: unknown[] | undefined;
  const event = AttemptEvent.open(ctx);
  const ballots = await poll(
    ctx.nodes,
    {
      script: RW_ACQUIRE_SCRIPT,
      keys: rwKeys(ctx.config.metaPrefix, keys),
      args: [
        value,
        ttl,
        mode === 'write' ? 'w' : 'r',
        intentLife,
        ...(wake.member === undefined
          ? []
          : [wake.member, wake.life, wake.listed ? 1 : 0]),
      ],
    },
    (reply, i) => {
      if (Array.isArray(reply)) conflict = reply;
      return Number(reply) === 1 ? ctx.standing.grant(i, keys) : 'busy';
    },
    timing.nodeTimeout,
    ctx.isDecided,
    { limitMs: timing.ttl - timing.drift, answered: event?.answered },
  );
  event?.publish(call.resources, value, ballots, { mode });
  const granted = countGranted(ballots);
  const validity = timing.ttl - (ctx.clock.now() - start) - timing.drift;
  if (granted >= ctx.quorum && validity > 0) {
    const lock = createLock(ops, {
      resources: call.resources,
      keys,
      value,
      ttl: timing.ttl,
      deadline: start + timing.ttl - timing.drift,
      shape: { mode },
    });
    return { lock, ballots };
  }
  // Every node that did not refuse may hold our entry (a lost reply).
  if (ballots.some((b) => b.outcome !== 'busy'))
    await awaitedByQuit(
      ctx,
      sendScriptedRelease(
        ctx,
        scripts,
        keys,
        value,
        true,
        start + timing.ttl - ctx.clock.now(),
      ),
    );
  if (conflict) throw shapeConflict(call.resources, conflict);
  return {
    ballots,
    reason: failureReason(ctx.quorum, granted, ballots),
    holderTtl: shortestHolderTtl(ballots),
  };
}
