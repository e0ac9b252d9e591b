import {
  Catch,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError } from './errors/lock-not-acquired.error.js';

/**
 * Answers HTTP requests whose handler could not get its lock with
 * `409 Conflict` (held elsewhere) or `503 Service Unavailable` (a quorum of
 * nodes unreachable, or the app shutting down): a JSON body naming the
 * resources and the reason, and a `Retry-After` header (whole seconds).
 * Nest's default filter would answer 500 and cannot set headers. Registered globally by `RedlockModule`; it catches only
 * `LockNotAcquiredError`, so the app's own filters keep handling the rest,
 * and filters bound to a controller or method still take precedence.
 * Outside HTTP the error goes on unchanged, the way each transport takes
 * it from a filter: for microservices (RPC) as an Observable that errors
 * with it (a filter that throws there leaves the client without a reply
 * until its timeout), elsewhere (GraphQL) rethrown.
 *
 * @publicApi
 */
@Catch(LockNotAcquiredError)
export class LockConflictFilter implements ExceptionFilter<LockNotAcquiredError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    error: LockNotAcquiredError,
    host: ArgumentsHost,
  ): void | Observable<never> {
    const type = host.getType();
    if (type === 'rpc') return throwError(() => error);
    if (type !== 'http') throw error;
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    const retryAfter = Math.max(1, Math.ceil(error.retryAfter / 1000));
    httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    const status = error.statusCode;
    // The body names the resources, not the Redis nodes: node addresses are
    // internal and stay in the server's logs.
    httpAdapter.reply(
      response,
      {
        statusCode: status,
        error: status === 409 ? 'Conflict' : 'Service Unavailable',
        message:
          (status === 409
            ? `The resource is locked: `
            : `The lock service is unavailable for: `) +
          `${error.resources.join(', ')}. Retry after ${retryAfter} s.`,
        resources: error.resources,
        reason: error.reason,
      },
      status,
    );
  }
}
