import {
  Catch,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import { BaseExceptionFilter, HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { LockNotAcquiredError } from './errors/lock-not-acquired.error.js';
import { LockServiceUnavailableError } from './errors/lock-service-unavailable.error.js';
import { retryAfterOf } from './utils/retry-after.js';

/**
 * Answers HTTP requests whose handler could not get its lock with
 * `409 Conflict` (held elsewhere) or `503 Service Unavailable` (a quorum of
 * nodes unreachable, or the app shutting down: `LockNotAcquiredError`, and
 * `LockServiceUnavailableError` for a call refused at shutdown): a JSON body
 * naming the resources and the reason, and a `Retry-After` header (whole
 * seconds: the `retryAfter` of the module or of `@Locked`, else the error's
 * own hint).
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
@Catch(LockNotAcquiredError, LockServiceUnavailableError)
export class LockConflictFilter implements ExceptionFilter<
  LockNotAcquiredError | LockServiceUnavailableError
> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    error: LockNotAcquiredError | LockServiceUnavailableError,
    host: ArgumentsHost,
  ): void | Observable<never> {
    const type = host.getType();
    if (type === 'rpc') return throwError(() => error);
    if (type !== 'http') throw error;
    const { httpAdapter } = this.adapterHost;
    const reply = replyTo(error);
    // A @Locked method on an object Nest did not make is a bug: Nest's own
    // answer (500, logged).
    if (!reply) return new BaseExceptionFilter(httpAdapter).catch(error, host);
    const response: unknown = host.switchToHttp().getResponse();
    const retryAfter = Math.max(1, Math.ceil(reply.retryAfterMs / 1000));
    httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    const { status, resources, reason } = reply;
    // The body names the resources, not the Redis nodes: node addresses are
    // internal and stay in the server's logs.
    httpAdapter.reply(
      response,
      {
        statusCode: status,
        error: status === 409 ? 'Conflict' : 'Service Unavailable',
        message: `${reply.message} Retry after ${retryAfter} s.`,
        resources,
        reason,
      },
      status,
    );
  }
}

interface Reply {
  readonly status: 409 | 503;
  readonly message: string;
  readonly resources: readonly string[];
  readonly reason: string;
  readonly retryAfterMs: number;
}

function replyTo(
  error: LockNotAcquiredError | LockServiceUnavailableError,
): Reply | undefined {
  if (error instanceof LockNotAcquiredError)
    return {
      status: error.statusCode,
      message:
        (error.statusCode === 409
          ? 'The resource is locked: '
          : 'The lock service is unavailable for: ') +
        `${error.resources.join(', ')}.`,
      resources: error.resources,
      reason: error.reason,
      retryAfterMs: retryAfterOf(error),
    };
  if (error.reason !== 'shutdown') return undefined;
  return {
    status: 503,
    message: 'The server is shutting down and takes no new locks.',
    resources: [],
    reason: 'shutdown',
    retryAfterMs: 1000,
  };
}
