import { setTimeout as sleep } from 'node:timers/promises';
import type { WaitContext, WaitStrategy } from '../config/wait-strategy.js';

/** `retryDelay` + 0..`retryJitter`, capped by the holder's lease and the time left. */
export function fallbackDelay({
  remaining,
  holderTtl,
  retryDelay,
  retryJitter,
}: WaitContext): number {
  let delay = retryDelay + Math.random() * retryJitter;
  if (holderTtl !== undefined && holderTtl >= 0)
    delay = Math.min(delay, holderTtl + 1);
  return Math.min(delay, remaining);
}

/**
 * Waits `retryDelay` plus a random 0..`retryJitter` ms (so competing clients
 * desynchronise), never past the holder's remaining lease or the wait timeout.
 *
 * @publicApi
 */
export class JitteredRetry implements WaitStrategy {
  async wait(context: WaitContext): Promise<void> {
    const { signal } = context;
    await sleep(
      fallbackDelay(context),
      undefined,
      signal ? { signal } : undefined,
    );
  }
}
