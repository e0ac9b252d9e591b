export * from './core/index.js';
export * from './decorators/index.js';
export * from './interfaces/index.js';
// Thrown by the Nest layer only, so not in `nestjs-redlock/core`.
export { LockKeyError } from './errors/lock-key.error.js';
export { LockUpgradeError } from './errors/lock-upgrade.error.js';
export {
  LockServiceUnavailableError,
  type LockServiceUnavailableReason,
} from './errors/lock-service-unavailable.error.js';
export { LockConflictFilter } from './lock-conflict.filter.js';
export {
  isLockConflict,
  lockConflictOf,
  type LockConflict,
} from './conflict/lock-conflict.js';
export { LockInterceptor } from './lock.interceptor.js';
export { LockService } from './lock.service.js';
export {
  getLockServiceToken,
  getRedlockToken,
  LOCK_SERVICE,
  REDLOCK,
} from './redlock.constants.js';
export { RedlockModule } from './redlock.module.js';
export type { RedlockOptionsFactory } from './redlock.module-definition.js';
export type { RetryAfter } from './utils/retry-after.js';
