import type { AcquireOptions, LockMode } from '../config/options.js';
import { queueLife } from '../config/timing.js';
import type { RedlockContext } from '../context.js';
import type { Lock, LockOperations } from '../lock.js';
import { resolveCall, type AcquireCall } from '../operations/acquire-call.js';
import { count } from '../operations/acquire.js';
import { stopReason } from '../operations/stop.js';
import { READ_WRITE_SHAPE, type ShapeBook } from '../shapes/shape-book.js';
import { randomValue } from '../util/lock-value.js';
import { rejected } from '../util/rejected.js';
import { awaitedByQuit } from '../util/awaited-by-quit.js';
import { checkOneSlot } from '../shapes/one-slot.js';
import { checkNoMutexHeld, gaveUp } from '../shapes/shape-errors.js';
import { checkShapeOptions } from '../shapes/shape-options.js';
import { publishWait } from '../shapes/shape-events.js';
import { RwWakeList } from './rw-wake-list.js';
import {
  sendScriptedRelease,
  type ShapeScripts,
} from '../shapes/scripted-lock-ops.js';
import { attemptRw, type RwAttempt } from './rw-attempt.js';
import type { RwWaiters } from './rw-waiters.js';

/** What the read/write acquires of one `Redlock` need besides its context. */
export interface RwHost {
  readonly ctx: RedlockContext;
  readonly shapes: ShapeBook;
  readonly waiters: RwWaiters;
  /** The operations of the read/write locks it hands out. */
  readonly rwOps: LockOperations;
  /** Their scripts (also for a failed attempt's take-back). */
  readonly rwScripts: ShapeScripts;
}

/**
 * `acquire()` / `tryAcquire()` with `mode`: a read or write lock on every
 * resource, all or nothing. Attempts as a mutex does; between attempts
 * waits until a read/write lock of one of the resources is released in
 * this process, the lease the nodes reported ends, or `retryDelay` (+
 * jitter) passes, until `waitTimeout`. A writer that readers refused keeps
 * new readers out meanwhile (its intent), and drops that intent when it
 * gives up. `once`: `tryAcquire()`, one attempt and `null` when busy.
 */
export function acquireRw(
  host: RwHost,
  resources: string | string[],
  options: AcquireOptions & { mode: LockMode },
  once: boolean,
): Promise<Lock | null> {
  try {
    const call = resolveCall(host.ctx.config, resources, options);
    checkShapeOptions(options, call.fencing);
    checkOneSlot(host.ctx, call);
    const stop = stopReason(host.ctx, call.resources, 0, call.signal);
    if (stop !== undefined) return Promise.reject(stop);
    checkNoMutexHeld(host.ctx, call, READ_WRITE_SHAPE);
    host.shapes.enter(call.resources, READ_WRITE_SHAPE);
    return rwRounds(host, call, options.mode, once).then(
      (lock) => {
        host.shapes.leave(call.resources, lock ?? undefined);
        return lock;
      },
      (error: unknown) => {
        host.shapes.leave(call.resources);
        throw error;
      },
    );
  } catch (error) {
    return rejected(error);
  }
}

async function rwRounds(
  host: RwHost,
  call: AcquireCall,
  mode: LockMode,
  once: boolean,
): Promise<Lock | null> {
  const { ctx } = host;
  const { resources, timing, signal, keys } = call;
  const giveUpAt = ctx.clock.now() + timing.waitTimeout;
  const value = randomValue();
  const intentLife = queueLife(timing);
  let attempts = 0;
  let last: RwAttempt | undefined;
  let held = false;
  const wake = new RwWakeList(ctx, keys, timing, !once);
  try {
    for (;;) {
      const stop = stopReason(ctx, resources, attempts, signal);
      if (stop !== undefined) throw stop;
      attempts++;
      wake.expect();
      const attempt = attemptRw(
        ctx,
        host.rwOps,
        host.rwScripts,
        call,
        mode,
        value,
        intentLife,
        wake,
      );
      ctx.active.set(attempt, timing.nodeTimeout);
      const seen = host.waiters.attempting(resources);
      let missed = false;
      last = await attempt.finally(() => {
        ctx.active.delete(attempt);
        missed = host.waiters.attempted(resources, seen);
      });
      if (last.lock) {
        const late = stopReason(ctx, resources, attempts, signal);
        if (late !== undefined) {
          await last.lock.release();
          throw late;
        }
        ctx.held.add(last.lock);
        count(ctx, attempts > 1);
        held = true;
        return last.lock;
      }
      wake.listed = true;
      const remaining = giveUpAt - ctx.clock.now();
      if (once) {
        if (last.reason === 'busy') return null;
        throw gaveUp(call, attempts, last);
      }
      if (remaining < 1) throw gaveUp(call, attempts, last);
      // quit() or an abort while the attempt was out: no wait to start.
      const stopped = stopReason(ctx, resources, attempts, signal);
      if (stopped !== undefined) throw stopped;
      ctx.stats.retries++;
      // Released here while the attempt was out: its wake-up came already.
      if (missed) continue;
      publishWait(resources, attempts, remaining, last.holderTtl, { mode });
      const poll = timing.retryDelay + Math.random() * timing.retryJitter;
      await host.waiters.wait(
        resources,
        Math.min(remaining, poll, (last.holderTtl ?? Infinity) + 1),
        signal,
        ctx.readyWaits,
        (woken) => wake.listen(woken),
      );
    }
  } finally {
    wake.close();
    // A writer that gives up (or tries once) drops its intent, or readers
    // would wait for a writer that is gone until the intent lapses.
    if (mode === 'write' && attempts > 0 && !held)
      // Before quit() closes the connections (it waits for this).
      await awaitedByQuit(
        ctx,
        sendScriptedRelease(
          ctx,
          host.rwScripts,
          keys,
          value,
          false,
          timing.nodeTimeout,
        ),
      );
  }
}
