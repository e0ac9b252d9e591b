// `nestjs-redlock/core`: the framework-free lock, loading no @nestjs/* and no
// rxjs. `nestjs-redlock` re-exports all of it beside the Nest module.
export * from '../errors/index.js';
export * from './config/defaults.js';
export type * from './config/options.js';
export type { RedlockStats } from './context.js';
export {
  REDLOCK_CHANNELS,
  type AcquireMessage,
  type AttemptMessage,
  type ExtendMessage,
  type FenceMessage,
  type HandoverMessage,
  type LostMessage,
  type NotAcquiredMessage,
  type ReleaseMessage,
  type WaitMessage,
  type WokenMessage,
} from './events/channels.js';
export * from './fencing/fence.js';
export type { FencedCommand } from './fencing/fenced-command.js';
export * from './fencing/fenced-store.js';
export {
  compareFencingTokens,
  fenceCounterKey,
  isFencingToken,
  type FencingToken,
} from './fencing/tokens.js';
export { Lock, type ReleaseResult } from './lock.js';
export type { NodeHealth, RedlockHealth } from './nodes/health.js';
export type {
  LockHolder,
  LockInspection,
  NodeInspection,
} from './operations/inspect.js';
export { Redlock } from './redlock.js';
export * from './util/clock.js';
export * from './waiting/wait-strategy.js';
export * from './waiting/wake-on-release.js';
