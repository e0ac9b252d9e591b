import { abortReason } from '../util/abort.js';
import type { ReleaseListener } from './release-listener.js';
import {
  fallbackDelay,
  type WaitContext,
  type WaitStrategy,
} from './wait-strategy.js';

/**
 * The default strategy: a waiter takes a place in the nodes' wait queues,
 * and the release of a key wakes the longest-waiting one, which then holds
 * the lock outright (a single resource without fencing: the nodes gave it
 * the key) or asks at once. Otherwise it tries again after the same
 * fallback delay as {@link JitteredRetry}, so a lost message or a crashed
 * holder (its lease runs out, nothing is announced) never strands a waiter
 * for longer than that.
 *
 * @publicApi
 */
export class WakeOnRelease implements WaitStrategy {
  readonly listensForReleases = true;

  /** @internal Created by `Redlock` with its nodes' listener. */
  constructor(private readonly listener: ReleaseListener) {}

  wait(context: WaitContext): Promise<void> {
    const { signal } = context;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        stop();
        signal?.removeEventListener('abort', aborted);
      };
      const woken = () => {
        done();
        resolve();
      };
      const aborted = () => {
        done();
        reject(abortReason(signal!));
      };
      const timer = setTimeout(woken, fallbackDelay(context));
      const stop = this.listener.listen(context.keys, context.value, woken);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }
}
