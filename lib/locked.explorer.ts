import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import { RedlockConfigError } from './errors/redlock-config.error.js';
import {
  lockedMetadata,
  type LockedMetadata,
} from './locked-metadata.accessor.js';
import type { LockSet } from './interfaces/lock-set.interface.js';
import type { LockedOptions } from './interfaces/locked-options.interface.js';
import {
  getLockServiceToken,
  LOCK_SET,
  lockServiceRef,
} from './redlock.constants.js';

/** The part of an InstanceWrapper the explorer reads. */
interface Wrapper {
  readonly name: unknown;
  readonly instance: unknown;
  readonly metatype: unknown;
  readonly isAlias: boolean;
  readonly isNotMetatype: boolean;
  isDependencyTreeStatic(): boolean;
}

/**
 * At bootstrap, finds every `@Locked` / `@LockKey` method of the app's
 * providers and controllers and:
 * - fails start (`RedlockConfigError` naming `Class.method`) for a key or
 *   option problem, such as a placeholder that names no parameter, or timing
 *   that does not fit the module's (`nodeTimeout` ≥ `ttl`);
 * - gives `LockService` to instances Nest did not build from their class
 *   (`useFactory`, `useValue`), which property injection cannot reach;
 * - fails start for a request-scoped or transient provider built by a
 *   factory if Nest built an instance of it at start, whose per-request
 *   instances nothing could reach. Usually Nest builds none then, so no
 *   method is seen here: their calls are refused at run time instead
 *   (`LockServiceUnavailableError` naming `Class.method`), never run
 *   unlocked.
 * It never rewraps methods: `@Locked` wrapped them when the class was defined.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
    /** The lock set of the `RedlockModule` import this explorer belongs to. */
    @Inject(LOCK_SET) private readonly set: LockSet,
  ) {}

  onModuleInit(): void {
    const problems: RedlockConfigError[] = [];
    const checked = new Set<object>();
    const wrappers = [
      ...this.discovery.getControllers(),
      ...this.discovery.getProviders(),
    ] as unknown as Wrapper[];
    for (const wrapper of wrappers) {
      if (wrapper.isAlias) continue;
      const proto = prototypeOf(wrapper);
      if (!proto) continue;
      const methods = this.scanner.getAllMethodNames(proto);
      const locked = methods.filter((name) =>
        lockedMetadata.locked(proto[name]),
      );
      // Each set's explorer looks after the methods that lock with it.
      const mine = locked.filter(
        (name) => setOf(lockedMetadata.locked(proto[name])!) === this.set.name,
      );
      if (!checked.has(proto)) {
        checked.add(proto);
        for (const name of locked) {
          const meta = lockedMetadata.locked(proto[name])!;
          const set = setOf(meta);
          if (set === this.set.name)
            problems.push(...this.check('@Locked', meta));
          else if (!this.registered(set))
            problems.push(
              new RedlockConfigError(
                `@Locked on ${meta.method}`,
                `lock set ${JSON.stringify(set)} is not registered: import RedlockModule.forRoot({ name: ${JSON.stringify(set)}, ... }) (or forRootAsync) in the application, or fix options.lockSet`,
              ),
            );
        }
        // LockInterceptor locks with the default set.
        if (this.set.name === undefined)
          for (const name of methods) {
            const meta = lockedMetadata.lockKey(proto[name]);
            if (meta) problems.push(...this.check('@LockKey', meta));
          }
      }
      if (mine.length && wrapper.isNotMetatype) {
        const problem = this.backfill(wrapper, `${nameOf(wrapper)}.${mine[0]}`);
        if (problem) problems.push(problem);
      }
    }
    if (problems.length === 1) throw problems[0];
    if (problems.length > 1)
      throw new RedlockConfigError(
        '@Locked',
        `${problems.length} problems:\n${problems.map((p) => `  - ${p.message}`).join('\n')}`,
      );
  }

  /** Whether an import registered the lock set `name`. */
  private registered(name: string | undefined): boolean {
    try {
      this.moduleRef.get(getLockServiceToken(name), { strict: false });
      return true;
    } catch {
      return false;
    }
  }

  private check(
    decorator: string,
    meta: {
      method: string;
      problems: readonly string[];
      options: LockedOptions;
    },
  ): RedlockConfigError[] {
    const field = `${decorator} on ${meta.method}`;
    if (meta.problems.length)
      return [new RedlockConfigError(field, meta.problems.join('; '))];
    try {
      // Per-decorator timing must also fit the module's (nodeTimeout < ttl).
      this.set.service.redlock.resolveTiming(meta.options);
      return [];
    } catch (error) {
      return [new RedlockConfigError(field, (error as Error).message)];
    }
  }

  /** Gives LockService to an instance built by a factory or given as a value. */
  private backfill(
    wrapper: Wrapper,
    method: string,
  ): RedlockConfigError | undefined {
    if (!wrapper.isDependencyTreeStatic())
      return new RedlockConfigError(
        `@Locked on ${method}`,
        `provider ${nameOf(wrapper)} is request-scoped or transient and built by a factory: its per-request instances cannot receive LockService. Provide the class itself (useClass or the class), or make it a singleton.`,
      );
    const instance = wrapper.instance as Record<symbol, unknown> | null;
    if (typeof instance !== 'object' || instance === null) return undefined;
    const ref = lockServiceRef(this.set.name);
    if (instance[ref] !== undefined) return undefined;
    if (!Object.isExtensible(instance))
      return new RedlockConfigError(
        `@Locked on ${method}`,
        `provider ${nameOf(wrapper)} is frozen or sealed, so LockService cannot be attached to it; provide an extensible instance.`,
      );
    Object.defineProperty(instance, ref, {
      value: this.set.service,
      enumerable: false,
      configurable: true,
      writable: true,
    });
    return undefined;
  }
}

/** The lock set a `@Locked` method locks with (`undefined`: the default set). */
function setOf(meta: LockedMetadata): string | undefined {
  const set = meta.options.lockSet;
  return typeof set === 'string' ? set : undefined;
}

/** The prototype whose methods a provider's instances have. */
function prototypeOf(wrapper: Wrapper): Record<string, unknown> | undefined {
  if (!wrapper.isNotMetatype)
    return (wrapper.metatype as { prototype?: Record<string, unknown> })
      ?.prototype;
  const instance = wrapper.instance;
  return typeof instance === 'object' && instance !== null
    ? (Object.getPrototypeOf(instance) as Record<string, unknown>)
    : undefined;
}

function nameOf(wrapper: Wrapper): string {
  return typeof wrapper.name === 'string'
    ? wrapper.name
    : typeof wrapper.name === 'symbol'
      ? wrapper.name.toString()
      : String((wrapper.metatype as { name?: string })?.name);
}
