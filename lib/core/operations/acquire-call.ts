import type { AcquireOptions } from '../config/options.js';
import { CALL_OPTIONS, refuseUnknownOptions } from '../config/option-names.js';
import { checkSignalOption } from '../config/call-options.js';
import {
  callFencing,
  callTiming,
  type RedlockConfig,
} from '../config/resolve.js';
import { normalizeResources } from '../config/resources.js';
import type { ResolvedTiming } from '../config/timing.js';
import { lineOf } from '../contention/line.js';

/** What one acquire call asks for, its options resolved. */
export interface AcquireCall {
  readonly resources: string[];
  readonly keys: string[];
  readonly timing: ResolvedTiming;
  readonly fencing: boolean;
  readonly signal: AbortSignal | undefined;
  /** The local line its callers of this process wait in. */
  readonly line: string;
}

/**
 * Validates and resolves the arguments of `acquire()` / `tryAcquire()` for
 * an instance of `config` (the in-memory lock of `nestjs-redlock/testing`
 * resolves its calls here too).
 */
export function resolveCall(
  config: RedlockConfig,
  resources: string | string[],
  options: AcquireOptions | undefined,
): AcquireCall {
  const names = normalizeResources(resources);
  const timing = callTiming(config, options);
  if (options !== undefined) refuseUnknownOptions(options, CALL_OPTIONS);
  const keyOf = config.keyOf;
  // An array literal for the one-key call keeps the keys' elements kind
  // stable from the first call on (docs/performance.md, "The user's path").
  const keys = names.length === 1 ? [keyOf(names[0])] : names.map(keyOf);
  const fencing = callFencing(config, options);
  const signal = checkSignalOption(options?.signal);
  return {
    resources: names,
    keys,
    timing,
    fencing,
    signal,
    line: lineOf(keys, fencing),
  };
}
