import { abortReason } from './abort.js';

/**
 * Waits until `subscribe`'s `wake` is called (by a timer, a release
 * message, ...) or `signal` aborts, then rejects with the signal's reason.
 * `subscribe` starts what may wake the wait and returns what stops it; it
 * is stopped once the wait ends either way.
 */
export function untilWoken(
  subscribe: (wake: () => void) => () => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    let ended = false;
    // Set once subscribe returns: a wake during subscribe stops it after.
    const started: { stop?: () => void } = {};
    const end = () => {
      ended = true;
      started.stop?.();
      signal?.removeEventListener('abort', aborted);
    };
    const wake = () => {
      if (ended) return;
      end();
      resolve();
    };
    const aborted = () => {
      if (ended) return;
      end();
      reject(abortReason(signal!));
    };
    started.stop = subscribe(wake);
    if (ended) started.stop();
    else signal?.addEventListener('abort', aborted, { once: true });
  });
}
