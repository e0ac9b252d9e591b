import { untilWoken } from '../util/wake.js';
import type { ReleaseListener } from './release-listener.js';
import type { WaitContext, WaitStrategy } from '../config/wait-strategy.js';
import { fallbackDelay } from './jittered-retry.js';

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
    return untilWoken((wake) => {
      const timer = setTimeout(wake, fallbackDelay(context));
      const stop = this.listener.listen(context.keys, context.value, wake);
      return () => {
        clearTimeout(timer);
        stop();
      };
    }, context.signal);
  }
}
