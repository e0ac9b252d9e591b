import { Logger, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, DiscoveryService } from '@nestjs/core';
import { bindToGateways } from './conflict/gateway-filters.js';
import type { RedlockLogger } from './core/config/options.js';
import type { LockManager } from './core/lock-manager.js';
import { Redlock } from './core/redlock.js';
import { RedlockConfigError } from './errors/redlock-config.error.js';
import { show } from './core/util/validate.js';
import type { LockSet } from './interfaces/lock-set.interface.js';
import type { RedlockModuleOptions } from './interfaces/redlock-module-options.interface.js';
import { LockConflictFilter } from './lock-conflict.filter.js';
import { LockService } from './lock.service.js';
import { LockedExplorer } from './locked.explorer.js';
import {
  getLockServiceToken,
  getRedlockToken,
  LOCK_SERVICE,
  LOCK_SET,
  LOCK_SET_LOGGER,
  LOCK_SET_REDLOCK,
  REDLOCK,
  REDLOCK_LOGGER_CONTEXT,
  REDLOCK_MODULE_OPTIONS,
} from './redlock.constants.js';
import { checkModuleOptions } from './utils/module-options.js';

/**
 * The providers of one `RedlockModule` import: a lock set with its own
 * `Redlock` (not connected yet: the module connects it at init). The
 * default set (no `name`) is reached as `LockService`, `LOCK_SERVICE`,
 * `Redlock` and `REDLOCK`; a named one as `getLockServiceToken(name)` and
 * `getRedlockToken(name)` (`@InjectLockService(name)`), so several sets
 * live side by side in one app. Each import has its own explorer, which
 * looks after the `@Locked` methods of its set. `createRedlock` builds the
 * set's lock (the testing module gives an in-memory one): the providers
 * know it as a `LockManager` only.
 */
export function lockSetDefinition(
  definition: DynamicModule,
  {
    isGlobal,
    name,
    conflictFilter = true,
  }: { isGlobal: boolean; name: string | undefined; conflictFilter?: boolean },
  createRedlock: (options: RedlockModuleOptions) => LockManager = (options) =>
    new Redlock(options),
): DynamicModule {
  if (name !== undefined && (typeof name !== 'string' || name.length === 0))
    throw new RedlockConfigError(
      'name',
      `must be a non-empty string naming the lock set, got ${JSON.stringify(name)}`,
    );
  const context =
    name === undefined
      ? REDLOCK_LOGGER_CONTEXT
      : `${REDLOCK_LOGGER_CONTEXT}:${name}`;
  const serviceToken =
    name === undefined ? LockService : getLockServiceToken(name);
  const providers: Provider[] = [
    {
      // One logger for the set's Redlock and the module's start-up warning.
      provide: LOCK_SET_LOGGER,
      useFactory: (options: RedlockModuleOptions) => {
        // A factory of forRootAsync may resolve anything.
        if (typeof options !== 'object' || options === null)
          throw new RedlockConfigError(
            'options',
            `must be an object, got ${show(options)}`,
          );
        return options.logger ?? new Logger(context);
      },
      inject: [REDLOCK_MODULE_OPTIONS],
    },
    {
      provide: LOCK_SET_REDLOCK,
      // Not connected yet: see RedlockModule.onModuleInit.
      useFactory: (options: RedlockModuleOptions, logger: RedlockLogger) => {
        // Names and values; retryAfter is the module's own (the core knows
        // nothing of HTTP), what depends on several options the core's.
        checkModuleOptions(options);
        const { retryAfter: _retryAfter, ...core } = options;
        return createRedlock({ lazyConnect: true, ...core, logger });
      },
      inject: [REDLOCK_MODULE_OPTIONS, LOCK_SET_LOGGER],
    },
    ...(name === undefined
      ? [
          { provide: REDLOCK, useExisting: LOCK_SET_REDLOCK },
          { provide: Redlock, useExisting: LOCK_SET_REDLOCK },
          LockService,
          { provide: LOCK_SERVICE, useExisting: LockService },
        ]
      : [
          { provide: getRedlockToken(name), useExisting: LOCK_SET_REDLOCK },
          {
            provide: getLockServiceToken(name),
            useFactory: (redlock: LockManager, options: RedlockModuleOptions) =>
              new LockService(redlock, options),
            inject: [LOCK_SET_REDLOCK, REDLOCK_MODULE_OPTIONS],
          },
        ]),
    {
      provide: LOCK_SET,
      useFactory: (service: LockService): LockSet => ({ name, service }),
      inject: [serviceToken],
    },
    ...(conflictFilter ? conflictFilterProviders : []),
    LockedExplorer,
  ];
  return {
    ...definition,
    global: isGlobal,
    providers: [...(definition.providers ?? []), ...providers],
    exports: [
      ...(definition.exports ?? []),
      ...(name === undefined
        ? [LockService, LOCK_SERVICE, Redlock, REDLOCK]
        : [getLockServiceToken(name), getRedlockToken(name)]),
    ],
  };
}

/** Token of the provider that binds `LockConflictFilter` to the app's gateways. */
const GATEWAY_FILTERS = Symbol('nestjs-redlock:gateway-filters');

/**
 * The conflict filter, global for HTTP, GraphQL and microservices, and
 * bound to each WebSocket gateway (which global filters do not reach).
 */
const conflictFilterProviders: Provider[] = [
  { provide: APP_FILTER, useClass: LockConflictFilter },
  {
    provide: GATEWAY_FILTERS,
    useFactory: (discovery: DiscoveryService) =>
      bindToGateways(discovery, new LockConflictFilter()),
    inject: [DiscoveryService],
  },
];
