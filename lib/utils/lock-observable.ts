import { Observable, type Subscription } from 'rxjs';
import type { LockManager } from '../core/lock-manager.js';
import type { RunOptions } from '../core/config/options.js';
import { runLocked, SKIPPED, type LockedCall } from './run-locked.js';

/**
 * An Observable that, per subscription, takes the lock (`resources()` is
 * evaluated then, so a `LockKeyError` arrives as an error notification),
 * subscribes to `source()` under it, and keeps it (watchdog running) until
 * the source completes, errors, or the subscriber unsubscribes. The lock is
 * released before completion or error is passed on. With `skip` and the lock
 * not acquired, it emits `undefined` and completes without subscribing to
 * the source.
 */
export function lockObservable<T>(
  redlock: LockManager,
  resources: () => string[],
  source: () => Observable<T>,
  options: RunOptions | undefined,
  call: LockedCall,
): Observable<T> {
  return new Observable<T>((subscriber) => {
    let inner: Subscription | undefined;
    let finish: (() => void) | undefined;
    const work = () =>
      new Promise<T | undefined>((resolve, reject) => {
        let last: T | undefined;
        finish = () => resolve(last);
        if (subscriber.closed) return resolve(undefined);
        inner = source().subscribe({
          next: (value) => {
            last = value;
            subscriber.next(value);
          },
          error: reject,
          complete: () => resolve(last),
        });
      });
    new Promise<string[]>((resolve) => resolve(resources()))
      .then((names) => runLocked(redlock, names, work, options, call))
      .then(
        (result) => {
          // A skipped call gives `undefined`, as a skipped Promise method
          // resolves: completing empty would make Nest's HTTP layer (which
          // awaits the last value) answer 500.
          if (result === SKIPPED) subscriber.next(undefined as T);
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(error),
      );
    return () => {
      inner?.unsubscribe();
      finish?.();
    };
  });
}
