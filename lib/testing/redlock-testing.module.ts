import {
  Inject,
  Module,
  type BeforeApplicationShutdown,
  type DynamicModule,
} from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { LockManager } from '../core/lock-manager.js';
import {
  LOCK_SET_REDLOCK,
  REDLOCK_MODULE_OPTIONS,
} from '../redlock.constants.js';
import { lockSetDefinition } from '../redlock.providers.js';
import type { InMemoryRedlockOptions } from './in-memory-options.js';
import { InMemoryRedlock } from './in-memory-redlock.js';

/**
 * Options of `RedlockTestingModule.forRoot()`: the in-memory lock's, plus
 * the module's own `isGlobal` (default true) and `name` (a named lock set).
 *
 * @publicApi
 */
export interface RedlockTestingOptions extends InMemoryRedlockOptions {
  isGlobal?: boolean;
  name?: string;
}

/**
 * `RedlockModule` for unit tests, without Redis: the same `LockService`,
 * `@Locked`, `LockConflictFilter` (409/503) and tokens, over an
 * `InMemoryRedlock` (get it with `app.get(InMemoryRedlock)` to make a lock
 * lost, or look at holders; pass a `TestClock` to move time by hand).
 *
 * ```ts
 * const clock = new TestClock();
 * const app = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot({ clock })],
 *   providers: [OrdersService],
 * }).compile();
 * ```
 *
 * An app module that imports `RedlockModule` itself is switched with
 * `.overrideModule(imported).useModule(RedlockTestingModule.forRoot())`,
 * where `imported` is the very `RedlockModule.forRoot(...)` object the app
 * imports (Nest matches dynamic modules by reference).
 *
 * @publicApi
 */
@Module({ imports: [DiscoveryModule] })
export class RedlockTestingModule implements BeforeApplicationShutdown {
  constructor(
    @Inject(LOCK_SET_REDLOCK) private readonly redlock: LockManager,
  ) {}

  static forRoot(options: RedlockTestingOptions = {}): DynamicModule {
    const { isGlobal = true, name, ...lockOptions } = options;
    const definition = lockSetDefinition(
      {
        module: RedlockTestingModule,
        providers: [{ provide: REDLOCK_MODULE_OPTIONS, useValue: lockOptions }],
      },
      { isGlobal, name },
      // The Nest layer uses the lock through `LockManager` only.
      ({ clients: _, ...memory }) => new InMemoryRedlock(memory),
    );
    if (name !== undefined) return definition;
    return {
      ...definition,
      providers: [
        ...(definition.providers ?? []),
        { provide: InMemoryRedlock, useExisting: LOCK_SET_REDLOCK },
      ],
      exports: [...(definition.exports ?? []), InMemoryRedlock],
    };
  }

  /** As `RedlockModule`: waiters give up, work under a lock finishes, locks are released. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.redlock.quit();
  }
}
