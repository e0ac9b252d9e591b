import type { AcquireOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { AcquireTrace } from './trace.js';
import type { Lock } from '../lock.js';
import { resolveCall, type AcquireCall } from './acquire-call.js';
import type { AttemptResult } from './attempt.js';
import { notAcquired } from './not-acquired.js';
import { attemptOnce } from './attempt-once.js';
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
  const adopted = ctx.contention.takeLingering(
    call.line,
    Math.ceil(call.timing.ttl),
  );
  if (adopted) {
    ctx.contention.hold(call.line, adopted);
    ctx.held.add(adopted);
    return adopted;
  }
  const once = attemptOnce(ctx, call, trace, nullIfBusy);
  ctx.active.set(once, call.timing.nodeTimeout);
  try {
    const lock = await once;
    if (lock) ctx.held.add(lock);
    return lock;
  } finally {
    ctx.active.delete(once);
  }
}

/** A busy attempt is `null` for `tryAcquire()`; any other failure throws. */
function nullIfBusy(
  ctx: RedlockContext,
  call: AcquireCall,
  result: AttemptResult,
  attempts: number,
): null {
  if (result.reason === 'busy') return null;
  throw notAcquired(ctx, call.resources, attempts, result, call.timing.ttl);
}
