export * from './clock.js';
export type { NodeHealth, RedlockHealth } from './health.js';
export * from './lock.js';
export * from './redlock.js';
export * from './redlock-options.js';
export * from './wait-strategy.js';
export type { WatchdogOptions } from './keep-alive.js';
export { RedlockNode } from './redlock-node.js';
export {
  compareFencingTokens,
  fenceCounterKey,
  isFencingToken,
  type FencingToken,
} from './fencing.js';
