import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What a waiting acquire knows when its attempt failed.
 *
 * @publicApi
 */
export interface WaitContext {
  /** The lock keys being acquired (prefixed). */
  readonly keys: readonly string[];
  /** Attempts made so far (1 after the first). */
  readonly attempt: number;
  /** Milliseconds left before the acquire gives up; always > 0 here. */
  readonly remaining: number;
  /** The holder's remaining lease in ms, when a node reported it. */
  readonly holderTtl?: number;
  readonly retryDelay: number;
  readonly retryJitter: number;
  /** Aborts the wait. */
  readonly signal?: AbortSignal;
}

/**
 * Decides when a waiting acquire tries again. The default polls with jitter;
 * a strategy woken by release notifications can replace it without touching
 * the algorithm.
 *
 * @publicApi
 */
export interface WaitStrategy {
  /**
   * Resolves when the next attempt should start (at the latest after
   * `remaining` ms), or rejects with the signal's reason when aborted.
   */
  wait(context: WaitContext): Promise<void>;
}

/**
 * Waits `retryDelay` plus a random 0..`retryJitter` ms (so competing clients
 * desynchronise), never past the holder's remaining lease or the wait timeout.
 *
 * @publicApi
 */
export class JitteredRetry implements WaitStrategy {
  async wait({
    remaining,
    holderTtl,
    retryDelay,
    retryJitter,
    signal,
  }: WaitContext): Promise<void> {
    let delay = retryDelay + Math.random() * retryJitter;
    if (holderTtl !== undefined && holderTtl >= 0)
      delay = Math.min(delay, holderTtl + 1);
    await sleep(
      Math.min(delay, remaining),
      undefined,
      signal ? { signal } : undefined,
    );
  }
}
