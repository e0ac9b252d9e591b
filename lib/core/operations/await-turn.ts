import type { RedlockContext } from '../context.js';
import { channels, valueHash } from '../events/channels.js';
import type { Lock } from '../lock.js';
import { abortReason } from '../util/abort.js';
import type { GivenNotes } from '../contention/queue-place.js';
import type { Waiter } from '../contention/transferred.js';
import type { WaitContext } from '../config/wait-strategy.js';
import { stopReason } from './stop.js';

/**
 * Waits until the wait strategy says to try again; returns the lock when
 * a quorum of nodes gave us the key meanwhile.
 */
export async function awaitTurn(
  ctx: RedlockContext,
  waiter: Waiter,
  context: Pick<WaitContext, 'attempt' | 'remaining' | 'holderTtl' | 'signal'>,
): Promise<Lock | undefined> {
  const { signal } = context;
  const { resources, value, timing } = waiter;
  // quit() ran or the caller aborted while our attempt was out: give up
  // now rather than wait (the caller's reason first, as everywhere).
  const stopped = stopReason(ctx, resources, context.attempt, signal);
  if (stopped !== undefined) throw stopped;
  if (channels.wait.hasSubscribers)
    channels.wait.publish({
      resources,
      valueHash: valueHash(value),
      attempt: context.attempt,
      remainingMs: context.remaining,
      holderTtlMs: context.holderTtl,
    });
  let given: GivenNotes | undefined;
  try {
    await ctx.contention.wait({
      ...context,
      keys: waiter.keys,
      retryDelay: timing.retryDelay,
      retryJitter: timing.retryJitter,
      value,
    });
  } catch (error) {
    throw signal?.aborted ? abortReason(signal) : error;
  } finally {
    // This wait's notes are ours to read once, whatever happens next.
    given = ctx.contention.takeGiven(value);
  }
  // quit() woke us (a lock now could not even be released), or the
  // caller aborted. The caller's clean-up takes back a key given to us
  // meanwhile, as it does when the caller gave up.
  const stop = stopReason(ctx, resources, context.attempt, signal);
  if (stop !== undefined) throw stop;
  return waiter.queue && given && ctx.contention.transferred(waiter, given);
}
