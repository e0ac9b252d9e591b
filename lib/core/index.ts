// `nestjs-redlock/core`: the framework-free lock, loading no @nestjs/* and no
// rxjs. `nestjs-redlock` re-exports all of it beside the Nest module.
export * from '../errors/index.js';
export * from '../fencing/index.js';
export * from './clock.js';
export type { NodeHealth, RedlockHealth } from './health.js';
export { Lock, type ReleaseResult } from './lock.js';
export * from './redlock.js';
export * from './redlock-options.js';
export * from './wait-strategy.js';
export type { WatchdogOptions } from './keep-alive.js';
export {
  compareFencingTokens,
  fenceCounterKey,
  isFencingToken,
  type FencingToken,
} from './fencing.js';
