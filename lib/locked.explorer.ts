import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { RedlockConfigError } from './errors/redlock-config.error.js';
import { lockedMetadata } from './locked-metadata.accessor.js';
import type { LockService } from './lock.service.js';
import { LOCK_SERVICE, LOCK_SERVICE_REF } from './redlock.constants.js';
import type { LockedOptions } from './interfaces/locked-options.interface.js';

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
    @Inject(LOCK_SERVICE) private readonly service: LockService,
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
      const locked = this.scanner
        .getAllMethodNames(proto)
        .filter((name) => lockedMetadata.locked(proto[name]));
      const keyed = this.scanner
        .getAllMethodNames(proto)
        .filter((name) => lockedMetadata.lockKey(proto[name]));
      if (!checked.has(proto)) {
        checked.add(proto);
        for (const name of locked) {
          const meta = lockedMetadata.locked(proto[name])!;
          problems.push(...this.check('@Locked', meta));
        }
        for (const name of keyed)
          problems.push(
            ...this.check('@LockKey', lockedMetadata.lockKey(proto[name])!),
          );
      }
      if (locked.length && wrapper.isNotMetatype) {
        const problem = this.backfill(
          wrapper,
          `${nameOf(wrapper)}.${locked[0]}`,
        );
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
      this.service.redlock.resolveTiming(meta.options);
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
    if (instance[LOCK_SERVICE_REF] !== undefined) return undefined;
    if (!Object.isExtensible(instance))
      return new RedlockConfigError(
        `@Locked on ${method}`,
        `provider ${nameOf(wrapper)} is frozen or sealed, so LockService cannot be attached to it; provide an extensible instance.`,
      );
    Object.defineProperty(instance, LOCK_SERVICE_REF, {
      value: this.service,
      enumerable: false,
      configurable: true,
      writable: true,
    });
    return undefined;
  }
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
