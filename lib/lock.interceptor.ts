import {
  BadRequestException,
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { LockKeyError } from './errors/lock-key.error.js';
import { RedlockConfigError } from './errors/redlock-config.error.js';
import type { RootLookup } from './keys/key-template.js';
import { resolveKey } from './keys/lock-key.js';
import { lockedMetadata } from './locked-metadata.accessor.js';
import type { LockService } from './lock.service.js';
import { LOCK_SERVICE } from './redlock.constants.js';
import { lockObservable } from './utils/lock-observable.js';

const HTTP_PARTS = new Set(['params', 'query', 'body', 'headers', 'user']);

/**
 * Locks the resources named by the handler's `@LockKey(...)` while the
 * handler runs and while the Observable it returns streams (released in all
 * cases: complete, error, client gone). Handlers without `@LockKey` pass
 * through. An alternative to `@Locked` for controllers only: bind it with
 * `@UseInterceptors(LockInterceptor)` on a controller or a handler. A key
 * that cannot be built from an HTTP request (a missing `<body.sku>`)
 * answers 400 Bad Request.
 *
 * @publicApi
 */
@Injectable()
export class LockInterceptor implements NestInterceptor {
  constructor(@Inject(LOCK_SERVICE) private readonly service: LockService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const meta = lockedMetadata.lockKey(context.getHandler());
    if (!meta) return next.handle();
    if (meta.problems.length)
      return throwError(
        () =>
          new RedlockConfigError(
            `@LockKey on ${meta.method}`,
            meta.problems.join('; '),
          ),
      );
    return lockObservable(
      this.service.redlock,
      () => {
        try {
          return resolveKey(
            meta.key!,
            contextLookup(context),
            meta.method,
            undefined,
            [context],
          );
        } catch (error) {
          throw asBadRequest(error, context);
        }
      },
      // Called inside the lock's async context, so the handler sees it.
      () => next.handle(),
      meta.runOptions,
      {
        caller: `@LockKey ${meta.method}`,
        skip: meta.options.onNotAcquired === 'skip',
        onUnavailable: meta.options.onUnavailable,
        logger: this.service.logger,
        retryAfter: meta.options.retryAfter ?? this.service.retryAfter,
      },
    );
  }
}

/**
 * A key read from an HTTP request that lacks the field is the request's
 * fault: 400, naming the placeholder (not the class or method, which stay
 * in the `LockKeyError` given as `cause`). The interceptor runs before any
 * pipe could have rejected the request. Other transports get the
 * `LockKeyError` itself.
 */
function asBadRequest(error: unknown, context: ExecutionContext): unknown {
  if (!(error instanceof LockKeyError) || context.getType() !== 'http')
    return error;
  return new BadRequestException(
    `Cannot build the lock key: ${error.placeholder} ${error.problem}`,
    { cause: error },
  );
}

function contextLookup(context: ExecutionContext): RootLookup {
  const args = context.getArgs();
  return (root) => {
    if (typeof root === 'number')
      return root < args.length
        ? { found: true, value: args[root] }
        : { found: false };
    const type = context.getType<string>();
    if (type === 'http' && HTTP_PARTS.has(root)) {
      const request = context
        .switchToHttp()
        .getRequest<Record<string, unknown>>();
      return { found: true, value: request[root] };
    }
    if (root === 'data' && type === 'rpc')
      return { found: true, value: context.switchToRpc().getData() };
    if (root === 'data' && type === 'ws')
      return { found: true, value: context.switchToWs().getData() };
    return { found: false };
  };
}
