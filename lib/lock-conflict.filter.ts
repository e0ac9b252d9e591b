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
 * `409 Conflict`, a JSON body naming the resources, and a `Retry-After`
 * header (whole seconds). Nest's default filter would answer 500 and cannot
 * set headers. Registered globally by `RedlockModule`; it catches only
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
    // The body names the resources, not the Redis nodes: node addresses are
    // internal and stay in the server's logs.
    httpAdapter.reply(
      response,
      {
        statusCode: 409,
        error: 'Conflict',
        message: `The resource is locked: ${error.resources.join(', ')}. Retry after ${retryAfter} s.`,
        resources: error.resources,
        reason: error.reason,
      },
      409,
    );
  }
}
