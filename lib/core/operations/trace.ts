import { LockNotAcquiredError } from '../../errors/lock-not-acquired.error.js';
import type { AcquireOptions } from '../config/options.js';
import type { RedlockContext } from '../context.js';
import type { Lock, ReleaseResult } from '../lock.js';
import type { NodeVote } from '../../errors/node-vote.js';
import {
  channels,
  shapeOf,
  tokensOf,
  traced,
  valueHash,
  type AcquireMessage,
  type ExtendMessage,
  type ReleaseMessage,
} from '../events/channels.js';

/** What an acquire tells its trace: how many rounds it sent, and the last one's votes. */
export interface AcquireTrace {
  attempts: number;
  nodes?: readonly NodeVote[];
}

/** Whether anyone listens to an acquire's events (checked per call: nothing is built otherwise). */
export function acquireObserved(): boolean {
  return channels.acquire.hasSubscribers || channels.notAcquired.hasSubscribers;
}

/**
 * Runs an acquire (`run`) under the `acquire` TracingChannel, and publishes
 * `not-acquired` when it gives up.
 */
export function traceAcquire<T extends Lock | null>(
  ctx: RedlockContext,
  call: AcquireMessage['call'],
  resources: unknown,
  options: AcquireOptions | undefined,
  run: (trace: AcquireTrace) => Promise<T>,
): Promise<T> {
  const message: AcquireMessage = {
    resources: listOf(resources),
    call,
    fencing: options?.fencing ?? ctx.config.fencing,
    ttl: options?.ttl ?? ctx.config.timing.ttl,
    waitTimeout:
      call === 'tryAcquire'
        ? 0
        : (options?.waitTimeout ?? ctx.config.timing.waitTimeout),
    ...shapeOf(options),
  };
  const trace: AcquireTrace = { attempts: 0 };
  const start = ctx.clock.now();
  const settle = async (): Promise<T> => {
    try {
      const lock = await run(trace);
      if (lock) {
        message.valueHash = valueHash(lock.value);
        message.validityMs = lock.remaining();
        message.fencingTokens = tokensOf(lock.fencingTokens);
      }
      return lock;
    } catch (error) {
      if (
        error instanceof LockNotAcquiredError &&
        channels.notAcquired.hasSubscribers
      )
        channels.notAcquired.publish({
          resources: error.resources,
          reason: error.reason,
          attempts: error.attempts,
          nodes: error.nodes,
          retryAfterMs: error.retryAfter,
          ...shapeOf(options),
        });
      throw error;
    } finally {
      message.attempts = trace.attempts;
      message.waitMs = ctx.clock.now() - start;
      message.nodes = trace.nodes;
    }
  };
  return channels.acquire.hasSubscribers
    ? traced(channels.acquire, message, settle)
    : settle();
}

/** Runs `lock.extend()`'s work under the `extend` TracingChannel. */
export function traceExtend(
  lock: Lock,
  ttl: number | undefined,
  run: () => Promise<void>,
): Promise<void> {
  const message: ExtendMessage = {
    resources: lock.resources,
    valueHash: valueHash(lock.value),
    ttl,
    ...lock.shape,
  };
  return traced(channels.extend, message, async () => {
    await run();
    message.validityMs = lock.remaining();
  });
}

/** Runs `lock.release()`'s work under the `release` TracingChannel. */
export function traceRelease(
  lock: Lock,
  run: () => Promise<ReleaseResult>,
): Promise<ReleaseResult> {
  const message: ReleaseMessage = {
    resources: lock.resources,
    valueHash: valueHash(lock.value),
    holdMs: lock.heldFor(),
    ...lock.shape,
  };
  return traced(channels.release, message, async () => {
    const result = await run();
    message.result = result;
    return result;
  });
}

function listOf(resources: unknown): readonly string[] {
  if (typeof resources === 'string') return [resources];
  return Array.isArray(resources)
    ? resources.filter((r): r is string => typeof r === 'string')
    : [];
}
