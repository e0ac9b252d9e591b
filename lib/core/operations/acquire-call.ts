import type { AcquireOptions } from '../config/options.js';
import { checkRunOptions } from '../config/call-options.js';
import { callTiming, type RedlockConfig } from '../config/resolve.js';
import { normalizeResources } from '../config/resources.js';
import type { ResolvedTiming } from '../config/timing.js';
import { lineOf } from '../contention/line.js';
import { shapeOf, type LockShape } from '../events/channels.js';

/** What one acquire call asks for, its options resolved. */
export interface AcquireCall {
  readonly resources: string[];
  readonly keys: string[];
  readonly timing: ResolvedTiming;
  readonly fencing: boolean;
  readonly signal: AbortSignal | undefined;
  /** The local line its callers of this process wait in. */
  readonly line: string;
  /** A semaphore's `permits` or a read/write `mode`, as asked; `undefined` for a mutex. */
  readonly shape: LockShape | undefined;
}

/**
 * Validates and resolves the arguments of `acquire()` / `tryAcquire()` for
 * an instance of `config` (the in-memory lock of `nestjs-redlock/testing`
 * resolves its calls here too). The options are checked here, once per
 * call: `using()` and `run()` rely on it for theirs.
 */
export function resolveCall(
  config: RedlockConfig,
  resources: string | string[],
  options: AcquireOptions | undefined,
): AcquireCall {
  const names = normalizeResources(resources);
  checkRunOptions(options);
  const timing = callTiming(config, options);
  const keyOf = config.keyOf;
  // An array literal for the one-key call keeps the keys' elements kind
  // stable from the first call on (docs/performance.md, "The user's path").
  const keys = names.length === 1 ? [keyOf(names[0])] : names.map(keyOf);
  const fencing = options?.fencing ?? config.fencing;
  const signal = options?.signal;
  return {
    resources: names,
    keys,
    timing,
    fencing,
    signal,
    line: lineOf(keys, fencing),
    shape: shapeOf(options),
  };
}
