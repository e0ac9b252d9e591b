import type { AcquireOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { AcquireTrace } from '../events/trace.js';
import type { Lock } from '../lock.js';
import { votesOf } from '../nodes/poll.js';
import { randomValue } from '../util/lock-value.js';
import { resolveCall, type AcquireCall } from './acquire.js';
import { attempt, notAcquired } from './attempt.js';
import { sendRelease } from './send-release.js';
import { stopReason } from './stop.js';

/** See `Redlock.tryAcquire`. */
export async function tryAcquire(
  ctx: RedlockContext,
  resources: string | string[],
  options?: AcquireOptions,
  trace?: AcquireTrace,
): Promise<Lock | null> {
  const call = resolveCall(ctx.config, resources, options);
  // As acquire(): borrowed clients stay open after quit(), and a lock
  // taken now could not even be released.
  const stop = stopReason(ctx, call.resources, 0, call.signal);
  if (stop !== undefined) throw stop;
  // A release of this process held back for whoever asks next: ours, as
  // for acquire() (the key is still on the nodes, so an attempt would
  // find it busy).
  const adopted = ctx.localQueue.takeLingering(
    call.line,
    Math.ceil(call.timing.ttl),
  );
  if (adopted) {
    ctx.localQueue.hold(call.line, adopted);
    ctx.held.add(adopted);
    return adopted;
  }
  const once = tryOnce(ctx, call, trace);
  ctx.active.set(once, call.timing.nodeTimeout);
  try {
    const lock = await once;
    if (lock) ctx.held.add(lock);
    return lock;
  } finally {
    ctx.active.delete(once);
  }
}

async function tryOnce(
  ctx: RedlockContext,
  { resources, keys, timing, fencing, signal }: AcquireCall,
  trace: AcquireTrace | undefined,
): Promise<Lock | null> {
  const value = randomValue();
  const result = await attempt(ctx, resources, keys, value, timing, fencing);
  if (trace) {
    trace.attempts = 1;
    trace.nodes = votesOf(result.ballots);
  }
  if (result.lock) {
    const stop = stopReason(ctx, resources, 1, signal);
    if (stop === undefined) return result.lock;
    // Granted while quit() ran (the caller could not release it) or after
    // the caller gave up: take the keys back, while the connections are
    // open.
    await sendRelease(ctx, ctx.nodes, keys, value, timing.nodeTimeout, {
      leave: true,
    });
    throw stop;
  }
  if (result.reason === 'busy') return null;
  throw notAcquired(ctx, resources, 1, result);
}
