import {
  Inject,
  Module,
  type BeforeApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import {
  describeSameServer,
  SameServerCheck,
} from './core/nodes/same-server.js';
import type { LockManager } from './core/lock-manager.js';
import { RedlockConfigError } from './errors/redlock-config.error.js';
import type { RedlockLogger } from './core/config/options.js';
import { LOCK_SET_LOGGER, LOCK_SET_REDLOCK } from './redlock.constants.js';
import { ConfigurableModuleClass } from './redlock.module-definition.js';

/**
 * Distributed locks on Redis with the Redlock algorithm.
 *
 * ```ts
 * RedlockModule.forRoot({ clients: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] })
 * RedlockModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ clients: c.get('REDIS_URLS').split(',') }) })
 * RedlockModule.forRoot({ name: 'payments', clients: [...] })   // a second lock set
 * ```
 *
 * Global by default. Clients the module creates from URLs or options
 * connect while the application initialises and are closed on application
 * shutdown, after the locks still held are released; client instances
 * passed in are left to their owner, unless `closeClients` hands them
 * over. Each import with a `name` is a lock set of its own:
 * `@InjectLockService(name)`, `@Locked(key, { lockSet: name })`.
 *
 * @publicApi
 */
@Module({ imports: [DiscoveryModule] })
export class RedlockModule
  extends ConfigurableModuleClass
  implements OnModuleInit, BeforeApplicationShutdown
{
  constructor(
    @Inject(LOCK_SET_REDLOCK) private readonly redlock: LockManager,
    /** The set's logger: the `logger` option, or Nest's with the set's context. */
    @Inject(LOCK_SET_LOGGER) private readonly logger: RedlockLogger,
  ) {
    super();
  }

  /**
   * Connects the nodes, so the first lock of the app does not spend its
   * node timeout on connecting; a node that is down only costs this wait
   * once, and locks work when a quorum comes up. Nodes not reachable then
   * are logged once, with the cause. Here rather than when the
   * provider is built: a bootstrap that fails (another provider throws, or
   * the explorer's checks of `@Locked` in this module) runs no shutdown
   * hook, and connections opened before would keep the process alive. Nest
   * calls this after the hooks of this module's providers, and before those
   * of the modules that use it.
   */
  async onModuleInit(): Promise<void> {
    const enough = await this.redlock.ready();
    await this.refuseSameServer();
    const { nodes, quorum } = this.redlock;
    if (enough && nodes.every((n) => n.client.status === 'ready')) return;
    // Said once, here: afterwards each failed lock names its nodes.
    const report = await this.redlock.health();
    const missing = report.nodes
      .filter((n) => !n.up || n.quarantined)
      .map((n) => `${n.node} (${n.quarantined ? 'quarantined' : n.error})`)
      .join(', ');
    if (!enough)
      this.logger.warn(
        `Fewer than a quorum (${quorum} of ${nodes.length}) of Redis nodes reachable within 5 s, locks fail until they are; not reachable: ${missing}`,
      );
    else if (missing)
      this.logger.warn(
        `Redis nodes not reachable at start: ${missing}; locks go on with the others (${quorum} of ${nodes.length} needed)`,
      );
  }

  /**
   * Fails start when two entries of `clients` reached one server (see
   * `SameServerCheck`): a quorum counted on it would be no quorum. The
   * connections close first, as Nest runs no shutdown hook then.
   */
  private async refuseSameServer(): Promise<void> {
    const { nodes } = this.redlock;
    const quiet = { warn: () => undefined };
    // Nodes still connecting get a second: a pair may hide among them.
    const pair = await new SameServerCheck(nodes, quiet, false).find(1000);
    if (!pair) return;
    await this.redlock.quit();
    throw new RedlockConfigError(
      `clients[${pair.second}]`,
      describeSameServer(nodes, pair),
    );
  }

  /**
   * Before the HTTP server closes: new locks are refused (503), work under
   * a lock gets `shutdownTimeout` to finish, every lock still held is
   * released on the nodes, and the connections close (see `Redlock.quit`).
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.redlock.quit();
  }
}
