import type { LockMode, OnLockLost } from './options.js';

/**
 * Library defaults, in one place (docs/configuration.md's options table mirrors this).
 *
 * @publicApi
 */
export const REDLOCK_DEFAULTS = {
  ttl: 10_000,
  driftFactor: 0.01,
  waitTimeout: 5_000,
  retryDelay: 50,
  retryJitter: 50,
  /** Cap of the derived default `nodeTimeout` (`ttl / 10`). */
  maxDefaultNodeTimeout: 100,
  keyPrefix: 'lock:',
  metaPrefix: 'redlock:',
  localHandoff: 8,
  onLockLost: 'throw' as OnLockLost,
  fencing: false,
  lazyConnect: false,
  closeClients: false,
  restartQuarantine: 0,
  shutdownTimeout: 5_000,
  clockMonitor: false,
  /** `clockMonitor.interval`; its `exclusion` defaults to the `ttl`. */
  clockMonitorInterval: 1_000,
  recreateOnExtend: false,
} as const;

/** The values of `OnLockLost`, for validation (here and in `@Locked`'s). */
export const ON_LOCK_LOST: readonly OnLockLost[] = ['throw', 'ignore'];

/** The values of `LockMode`, for validation. */
export const LOCK_MODES: readonly LockMode[] = ['read', 'write'];

/**
 * How long `health()` waits for the nodes by default, in ms. More than a
 * lock attempt gives a node (the node timeout, 100 ms at most by default):
 * a readiness probe that fails whenever a loaded node answers one PING
 * late would take replicas out of service for nothing. The latencies it
 * reports show a node that is slow for locks.
 */
export const HEALTH_TIMEOUT_MS = 1000;
