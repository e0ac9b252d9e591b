import type { ExecutionContext } from '@nestjs/common';
import type { LockedOptions } from '../interfaces/locked-options.interface.js';
import { compileKey, type CompiledKey } from '../keys/lock-key.js';
import type { LockKeyMetadata } from '../locked-metadata.accessor.js';
import { LOCK_KEY_METADATA } from '../redlock.constants.js';
import { checkLockedOptions, toRunOptions } from '../utils/locked-options.js';

/** Placeholder roots `LockInterceptor` understands, besides positions into `context.getArgs()`. */
export const LOCK_KEY_ROOTS = [
  'params',
  'query',
  'body',
  'headers',
  'user',
  'data',
];

/**
 * The key `LockInterceptor` locks for this handler. Placeholders read the
 * request, not the handler's parameters (interceptors run before pipes):
 * `<params.id>`, `<query.x>`, `<body.items.*.sku>`, `<headers.x-tenant>`,
 * `<user.id>` (HTTP); `<data.id>` (microservices, WebSockets); `<1.id>` a
 * position in `context.getArgs()` (GraphQL: `[root, args, ctx, info]`). A
 * function receives the `ExecutionContext`.
 *
 * ```ts
 * @Post(':id/pay')
 * @UseInterceptors(LockInterceptor)
 * @LockKey('order:<params.id>', { waitTimeout: 0 })
 * pay(@Param('id') id: string) {}
 * ```
 *
 * @publicApi
 */
export function LockKey(
  key:
    | string
    | readonly string[]
    | ((context: ExecutionContext) => string | readonly string[]),
  options: LockedOptions = {},
): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const method = `${(target as object).constructor.name}.${String(propertyKey)}`;
    const problems: string[] = [];
    let compiled: CompiledKey | undefined;
    try {
      compiled = compileKey(key);
      if (compiled.kind === 'templates')
        for (const { text, root } of compiled.templates.flatMap(
          (t) => t.placeholders,
        ))
          if (typeof root === 'string' && !LOCK_KEY_ROOTS.includes(root))
            problems.push(
              `placeholder ${text} must start with one of ${LOCK_KEY_ROOTS.join(', ')} or a position into context.getArgs()`,
            );
    } catch (error) {
      problems.push(`key: ${(error as Error).message}`);
    }
    problems.push(...checkLockedOptions(options));
    if (options.lockSet !== undefined)
      problems.push(
        'options.lockSet is not supported by @LockKey (LockInterceptor locks with the default set); use @Locked on the handler',
      );
    const meta: LockKeyMetadata = {
      method,
      key: compiled,
      options,
      runOptions: problems.length ? {} : toRunOptions(options),
      problems,
    };
    Reflect.defineMetadata(LOCK_KEY_METADATA, meta, descriptor.value as object);
    return descriptor;
  };
}
