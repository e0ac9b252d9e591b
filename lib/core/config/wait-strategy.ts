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
  /** The value the waiting acquire will hold its lock with (release messages name waiters by it). */
  readonly value?: string;
}

/**
 * Decides when a waiting acquire tries again (the `waitStrategy` option).
 * The default, `WakeOnRelease`, is woken by release messages with a
 * jittered fallback retry; `JitteredRetry` only polls. Either can replace
 * the other without touching the algorithm.
 *
 * @publicApi
 */
export interface WaitStrategy {
  /**
   * True when waiters are woken by the nodes' release messages: they then
   * take a place in the nodes' wait queues, and a release may give them the
   * key outright. A strategy that only polls leaves it unset, so that no
   * node names a waiter that would never hear it.
   */
  readonly listensForReleases?: boolean;
  /**
   * Resolves when the next attempt should start (at the latest after
   * `remaining` ms), or rejects with the signal's reason when aborted.
   */
  wait(context: WaitContext): Promise<void>;
}
