import type { RunOptions } from './core/config/options.js';
import type { LockedOptions } from './interfaces/locked-options.interface.js';
import type { CompiledKey } from './keys/lock-key.js';
import type { ParameterList } from './keys/parameter-names.js';
import { LOCK_KEY_METADATA, LOCKED_METADATA } from './redlock.constants.js';

/** What `@Locked` records on the method it wrapped. */
export interface LockedMetadata {
  /** `Class.method`, for messages. */
  readonly method: string;
  /** `method(a, b)`, for messages. */
  readonly signature: string;
  readonly key?: CompiledKey;
  readonly params?: ParameterList;
  readonly options: LockedOptions;
  readonly runOptions: RunOptions;
  /** The property of the instance that holds the `LockService` of its lock set. */
  readonly serviceRef: symbol;
  /** The method is declared to return an Observable: lock per subscription. */
  readonly observable: boolean;
  /** What is wrong with the key or options; bootstrap fails on any. */
  readonly problems: readonly string[];
}

/** What `@LockKey` records for `LockInterceptor`. */
export interface LockKeyMetadata {
  readonly method: string;
  readonly key?: CompiledKey;
  readonly options: LockedOptions;
  readonly runOptions: RunOptions;
  readonly problems: readonly string[];
}

/** Typed getters for the metadata of `@Locked` and `@LockKey` (safe on any value). */
export const lockedMetadata = {
  locked(fn: unknown): LockedMetadata | undefined {
    return isObject(fn)
      ? (Reflect.getOwnMetadata(LOCKED_METADATA, fn) as LockedMetadata)
      : undefined;
  },
  lockKey(fn: unknown): LockKeyMetadata | undefined {
    return isObject(fn)
      ? (Reflect.getOwnMetadata(LOCK_KEY_METADATA, fn) as LockKeyMetadata)
      : undefined;
  },
};

function isObject(value: unknown): value is object {
  return (
    (typeof value === 'object' && value !== null) || typeof value === 'function'
  );
}
