// `nestjs-redlock/core`: the framework-free lock, loading no @nestjs/* and no
// rxjs. `nestjs-redlock` re-exports all of it beside the Nest module (and
// the errors only the Nest layer throws: LockKeyError,
// LockServiceUnavailableError). Names are listed, not `export *`: a helper
// exported for another file of lib/ does not become public by accident.
export type { NodeOutcome, NodeVote } from '../errors/node-vote.js';
export { LockExtendError } from '../errors/lock-extend.error.js';
export { LockLostError } from '../errors/lock-lost.error.js';
export { LockShapeError } from '../errors/lock-shape.error.js';
export {
  LockNotAcquiredError,
  type LockFailureReason,
} from '../errors/lock-not-acquired.error.js';
export { RedlockConfigError } from '../errors/redlock-config.error.js';
export {
  isRedlockError,
  REDLOCK_ERROR_BRAND,
  RedlockError,
} from '../errors/redlock.error.js';
export { StaleFencingTokenError } from '../errors/stale-fencing-token.error.js';
export { HEALTH_TIMEOUT_MS, REDLOCK_DEFAULTS } from './config/defaults.js';
export type * from './config/options.js';
export type { RedlockStats } from './context.js';
export {
  REDLOCK_CHANNELS,
  type AcquireMessage,
  type AttemptMessage,
  type ExtendMessage,
  type FenceMessage,
  type HandoverMessage,
  type LockShape,
  type LostMessage,
  type NotAcquiredMessage,
  type ReleaseMessage,
  type WaitMessage,
  type WokenMessage,
} from './events/channels.js';
export { fenceOf, type Fence } from './fencing/fence.js';
export type { FencedCommand } from './fencing/fenced-command.js';
export {
  FencedStore,
  type FencedStoreOptions,
} from './fencing/fenced-store.js';
export {
  compareFencingTokens,
  fenceCounterKey,
  isFencingToken,
  type FencingToken,
} from './fencing/tokens.js';
export { Lock, type ReleaseResult } from './lock.js';
export type { LockManager } from './lock-manager.js';
export type { NodeHealth, RedlockHealth } from './nodes/health.js';
export type {
  LockHolder,
  LockInspection,
  NodeInspection,
} from './operations/inspect.js';
export type {
  InspectionOf,
  InspectOptions,
  ReaderInspection,
  ReadWriteInspection,
  ReadWriteInspectOptions,
  ReadWriteNodeInspection,
  SemaphoreInspection,
  SemaphoreInspectOptions,
  SemaphoreNodeInspection,
} from './inspection/inspect-options.js';
export { Redlock } from './redlock.js';
export { monotonicClock, type Clock } from './util/clock.js';
export type { WaitContext, WaitStrategy } from './config/wait-strategy.js';
export { fallbackDelay, JitteredRetry } from './contention/jittered-retry.js';
// The default strategy: made by `Redlock` with its release listener, so a
// type here (an option left unset gives it).
export type { WakeOnRelease } from './contention/wake-on-release.js';
