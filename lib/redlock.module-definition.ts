import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockModuleOptions } from './interfaces/redlock-module-options.interface.js';

/**
 * `forRoot(options)` and `forRootAsync({ imports, inject, useFactory |
 * useClass | useExisting })`, global unless `isGlobal: false` (like
 * ScheduleModule: `@Locked` methods anywhere in the app must reach the
 * service). A class given to `useClass` implements `createRedlockOptions()`.
 */
export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: REDLOCK_MODULE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedlockModuleOptions>({
  moduleName: 'Redlock',
})
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedlockOptions')
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();

/**
 * A class that builds the module options, for `forRootAsync({ useClass })`.
 *
 * @publicApi
 */
export interface RedlockOptionsFactory {
  createRedlockOptions(): RedlockModuleOptions | Promise<RedlockModuleOptions>;
}
