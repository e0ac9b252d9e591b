import type { RedlockOptions } from '../core/config/options.js';

/**
 * Options of the in-memory lock: the core's, less what only Redis nodes
 * need. `clock`: a `TestClock` to move time by hand (default: real time).
 *
 * @publicApi
 */
export type InMemoryRedlockOptions = Omit<
  RedlockOptions,
  | 'clients'
  | 'quorum'
  | 'waitStrategy'
  | 'localHandoff'
  | 'lazyConnect'
  | 'restartQuarantine'
>;

/** The one node the in-memory lock reports. */
export const NODE = 'memory';
