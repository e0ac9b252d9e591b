import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockModuleOptions } from './interfaces/redlock-module-options.interface.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.constants.js';
import { lockSetDefinition } from './redlock.providers.js';

/**
 * `forRoot(options)` and `forRootAsync({ imports, inject, useFactory |
 * useClass | useExisting })`, global unless `isGlobal: false` (like
 * ScheduleModule: `@Locked` methods anywhere in the app must reach the
 * service), with an optional `name` for a lock set of its own (see
 * `lockSetDefinition`) and `conflictFilter: false` to answer lock conflicts
 * with your own filters only (see `LockConflictFilter`). A class given to `useClass` implements
 * `createRedlockOptions()`.
 */
export const { ConfigurableModuleClass, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } =
  new ConfigurableModuleBuilder<RedlockModuleOptions>({
    moduleName: 'Redlock',
    optionsInjectionToken: REDLOCK_MODULE_OPTIONS,
  })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedlockOptions')
    .setExtras(
      {
        isGlobal: true,
        name: undefined as string | undefined,
        conflictFilter: true,
      },
      (definition, extras) => lockSetDefinition(definition, extras),
    )
    .build();

/**
 * A class that builds the module options, for `forRootAsync({ useClass })`.
 *
 * @publicApi
 */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}
