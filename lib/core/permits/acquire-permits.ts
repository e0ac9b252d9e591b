import type { AcquireOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import { passedOn } from '../contention/handoff.js';
import { createLock, type Lock, type LockOperations } from '../lock.js';
import { resolveCall, type AcquireCall } from '../operations/acquire-call.js';
import { count } from '../operations/acquire.js';
import { stopReason } from '../operations/stop.js';
import { rejected } from '../util/rejected.js';
import { checkOneSlot } from '../shapes/one-slot.js';
import { checkNoMutexHeld, gaveUp } from '../shapes/shape-errors.js';
import { publishWait } from '../shapes/shape-events.js';
import type { ShapeScripts } from '../shapes/scripted-lock-ops.js';
import { attemptPermits, type PermitAttempt } from './permit-attempt.js';
import type { PermitBook } from './permit-book.js';
import { permitsShape, type ShapeBook } from '../shapes/shape-book.js';

/** What the permit acquires of one `Redlock` need besides its context. */
export interface PermitHost {
  readonly ctx: RedlockContext;
  /** The operations of the permit locks it hands out. */
  readonly permitOps: LockOperations;
  /** Their scripts (also for a failed attempt's take-back). */
  readonly permitScripts: ShapeScripts;
  readonly book: PermitBook;
  readonly shapes: ShapeBook;
}

/**
 * `acquire()` / `tryAcquire()` with `permits`: takes one free permit slot
 * of each resource, all or nothing (one attempt locks the chosen slots of
 * every resource at once, as a mutex over several resources is locked).
 * Tries the slots this process does not hold, from a random one, one
 * attempt each; when none is free, waits until a slot is released in this
 * process, the shortest lease seen ends, or `retryDelay` (+ jitter) passes,
 * and tries again, until `waitTimeout`. `once`: `tryAcquire()`, one round
 * and `null` when every slot is busy.
 */
export function acquirePermits(
  host: PermitHost,
  resources: string | string[],
  options: AcquireOptions & { permits: number },
  once: boolean,
): Promise<Lock | null> {
  try {
    const call = resolveCall(host.ctx.config, resources, options);
    const stop = stopReason(host.ctx, call.resources, 0, call.signal);
    if (stop !== undefined) return Promise.reject(stop);
    checkOneSlot(host.ctx, call);
    const shape = permitsShape(options.permits);
    checkNoMutexHeld(host.ctx, call, shape);
    host.shapes.enter(call.resources, shape);
    for (const r of call.resources) host.book.use(r, options.permits);
    return permitRounds(host, call, options.permits, once).then(
      (lock) => {
        host.shapes.leave(call.resources, lock ?? undefined);
        for (const r of call.resources) host.book.done(r);
        return lock;
      },
      (error: unknown) => {
        host.shapes.leave(call.resources);
        for (const r of call.resources) host.book.done(r);
        throw error;
      },
    );
  } catch (error) {
    return rejected(error);
  }
}

async function permitRounds(
  host: PermitHost,
  call: AcquireCall,
  permits: number,
  once: boolean,
): Promise<Lock | null> {
  const { ctx, book } = host;
  const { resources, timing, signal } = call;
  const giveUpAt = ctx.clock.now() + timing.waitTimeout;
  let attempts = 0;
  let last: PermitAttempt | undefined;
  // A permit lock of this process passed on as it stands (PermitBook.passOn,
  // PermitBook.adopt).
  let handed: Lock | undefined;
  const take =
    resources.length === 1 && !call.fencing
      ? (lock: Lock, via: 'queue' | 'lingering' = 'queue') => {
          if (lock.ttl !== timing.ttl) return undefined;
          handed = createLock(host.permitOps, {
            resources: lock.resources,
            keys: lock.keys,
            value: lock.value,
            ttl: lock.ttl,
            deadline: lock.deadline,
            shape: lock.shape,
            waited: true,
            waitedInRedis: lock.waitedInRedis,
          });
          ctx.held.add(handed);
          return passedOn(handed, via);
        }
      : undefined;
  for (;;) {
    // A lease released here a moment ago and kept for whoever asks next.
    const kept =
      take &&
      book.adopt(resources[0], ctx.config.localHandoff, (lock) =>
        take(lock, 'lingering'),
      );
    if (kept) {
      const late = stopReason(ctx, resources, attempts, signal);
      if (late !== undefined) {
        await kept.release();
        throw late;
      }
      count(ctx, attempts > 0);
      return kept;
    }
    const seen = book.freesOf(resources);
    for (const candidates of attemptsOf(
      resources.map((r) => book.candidates(r)),
    )) {
      const stop = stopReason(ctx, resources, attempts, signal);
      if (stop !== undefined) throw stop;
      attempts++;
      const attempt = attemptPermits(
        ctx,
        host.permitOps,
        host.permitScripts,
        call,
        permits,
        candidates,
      );
      ctx.active.set(attempt, timing.nodeTimeout);
      last = await attempt.finally(() => ctx.active.delete(attempt));
      if (last.lock && last.slots) {
        const late = stopReason(ctx, resources, attempts, signal);
        if (late !== undefined) {
          await last.lock.release();
          throw late;
        }
        ctx.held.add(last.lock);
        book.hold(resources, last.slots, last.lock, undefined, attempts > 1);
        count(ctx, attempts > 1);
        return last.lock;
      }
      // One resource: every candidate was refused, the first to free in
      // the lease reported (holders often release sooner: noted for no
      // longer than a poll, an order of trying, not a ban).
      if (resources.length === 1 && last.holderTtl !== undefined)
        for (const slot of candidates[0])
          book.busy(
            resources[0],
            slot,
            Math.min(last.holderTtl, timing.retryDelay + timing.retryJitter),
          );
    }
    const remaining = giveUpAt - ctx.clock.now();
    // tryAcquire(): null when busy (also when this process holds every
    // slot), an error when the nodes could not answer.
    if (once) {
      if (last === undefined || last.reason === 'busy') return null;
      throw gaveUp(call, attempts, last);
    }
    if (remaining < 1) throw gaveUp(call, attempts, last);
    // quit() or an abort while the attempt was out: no wait to start.
    const stopped = stopReason(ctx, resources, attempts, signal);
    if (stopped !== undefined) throw stopped;
    ctx.stats.retries++;
    // A slot freed here while the attempt was out: its wake-up came already.
    if (book.claimFree(resources, seen)) continue;
    publishWait(resources, attempts, remaining, last?.holderTtl, { permits });
    // A poll: every slot is worth a new try after it, held elsewhere or not.
    const poll = timing.retryDelay + Math.random() * timing.retryJitter;
    const leaseEnds = Math.min(
      ...resources.map((r) => (book.nextFree(r) ?? Infinity) - ctx.clock.now()),
    );
    const woken = await book
      .waitForRelease(
        resources,
        Math.min(remaining, poll, leaseEnds + 1),
        signal,
        ctx.readyWaits,
        take,
      )
      .catch(async (error: unknown) => {
        // Aborted after a lease passed to this caller: it goes on.
        await handed?.release();
        throw error;
      });
    if (handed) {
      const lock = handed;
      const late = stopReason(ctx, resources, attempts, signal);
      if (late !== undefined) {
        await lock.release();
        throw late;
      }
      count(ctx, true);
      return lock;
    }
    if (!woken) for (const r of resources) book.forgetBusy(r);
  }
}

/** Most candidate slots one attempt sends for a single resource: each is a key on every node. */
export const CANDIDATES_PER_ATTEMPT = 32;

/**
 * The attempts of one round, from each resource's candidate slots: for
 * one resource, its candidates in one attempt (each node takes the first
 * free one), by {@link CANDIDATES_PER_ATTEMPT}; for several, one candidate
 * of each per attempt, as many attempts as the shortest list.
 */
function attemptsOf(candidates: number[][]): number[][][] {
  if (candidates.length === 1) {
    const out: number[][][] = [];
    for (let i = 0; i < candidates[0].length; i += CANDIDATES_PER_ATTEMPT)
      out.push([candidates[0].slice(i, i + CANDIDATES_PER_ATTEMPT)]);
    return out;
  }
  const rounds = Math.min(...candidates.map((c) => c.length));
  return Array.from({ length: rounds }, (_, k) =>
    candidates.map((c) => [c[k]]),
  );
}
