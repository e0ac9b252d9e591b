import {
  Inject,
  Logger,
  Module,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_FILTER, DiscoveryModule } from '@nestjs/core';
import { Redlock } from './core/redlock.js';
import type { RedlockModuleOptions } from './interfaces/redlock-module-options.interface.js';
import { LockConflictFilter } from './lock-conflict.filter.js';
import { LockService } from './lock.service.js';
import { LockedExplorer } from './locked.explorer.js';
import {
  LOCK_SERVICE,
  REDLOCK,
  REDLOCK_LOGGER_CONTEXT,
} from './redlock.constants.js';
import {
  ConfigurableModuleClass,
  REDLOCK_MODULE_OPTIONS,
} from './redlock.module-definition.js';

/**
 * Distributed locks on Redis with the Redlock algorithm.
 *
 * ```ts
 * RedlockModule.forRoot({ clients: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] })
 * RedlockModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ clients: c.get('REDIS_URLS').split(',') }) })
 * ```
 *
 * Global by default. Clients the module created from URLs or options are
 * closed on application shutdown; client instances passed in are left to
 * their owner.
 *
 * @publicApi
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: REDLOCK,
      useFactory: async (options: RedlockModuleOptions) => {
        const logger = new Logger(REDLOCK_LOGGER_CONTEXT);
        const redlock = new Redlock({ logger, ...options });
        // Start with connected nodes, so the first lock of the app does not
        // spend its node timeout on connecting; a node that is down only
        // costs this wait once, and locks work when a quorum comes up.
        if (!(await redlock.ready()))
          logger.warn(
            `Fewer than a quorum (${redlock.quorum}) of Redis nodes connected within 5 s: locks fail until they do`,
          );
        return redlock;
      },
      inject: [REDLOCK_MODULE_OPTIONS],
    },
    { provide: Redlock, useExisting: REDLOCK },
    LockService,
    { provide: LOCK_SERVICE, useExisting: LockService },
    { provide: APP_FILTER, useClass: LockConflictFilter },
    LockedExplorer,
  ],
  exports: [LockService, LOCK_SERVICE, Redlock, REDLOCK],
})
export class RedlockModule
  extends ConfigurableModuleClass
  implements OnApplicationShutdown
{
  constructor(@Inject(REDLOCK) private readonly redlock: Redlock) {
    super();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redlock.quit();
  }
}
