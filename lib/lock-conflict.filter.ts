import {
  Catch,
  Optional,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import {
  ApplicationConfig,
  BaseExceptionFilter,
  HttpAdapterHost,
} from '@nestjs/core';
import { throwError } from 'rxjs';
import { answerGraphQL } from './conflict/graphql-answer.js';
import { answerHttp } from './conflict/http-answer.js';
import { conflictOf } from './conflict/lock-conflict.js';
import { answerRpc } from './conflict/rpc-answer.js';
import { answerWs } from './conflict/ws-answer.js';
import { LockNotAcquiredError } from './errors/lock-not-acquired.error.js';
import { LockServiceUnavailableError } from './errors/lock-service-unavailable.error.js';

/** Nest's metadata key for the classes a filter's `@Catch()` names. */
const CATCHES = '__filterCatchExceptions__';

/**
 * Catches `LockNotAcquiredError` and `LockServiceUnavailableError` (its
 * `@Catch()`), and answers a call that could not get its lock (a
 * `LockNotAcquiredError`, or a `LockServiceUnavailableError` with reason
 * `shutdown`) with a {@link LockConflict}, in the shape of each context:
 * - HTTP (Express, Fastify): 409 or 503, `Retry-After` in whole seconds,
 *   the conflict as the JSON body;
 * - GraphQL: the resolver's error, the conflict in its `extensions`;
 * - microservices: the RPC error `{ status: 'error', ...conflict }`;
 * - WebSockets: the `exception` event with the same payload, and the
 *   acknowledgement when the client asked for one.
 *
 * Registered globally by `RedlockModule` (and bound to every WebSocket
 * gateway, which Nest's global filters do not reach) unless
 * `conflictFilter: false`. Your own filters come first: one bound to a
 * controller, resolver, gateway or method, and a global one (`APP_FILTER`,
 * `useGlobalFilters`) whose `@Catch()` names these errors or `RedlockError`.
 * It logs no conflict: a conflict is an answer, not a failure. The
 * `LockServiceUnavailableError` of a `@Locked` method called outside Nest
 * (reason `unmanaged` or `detached`) is caught too, but answered as the
 * context answers an unknown error (HTTP 500, the RPC or WebSocket
 * error). Other errors of the library (`LockKeyError`) are not caught:
 * they go to the app's own handling.
 *
 * @publicApi
 */
@Catch(LockNotAcquiredError, LockServiceUnavailableError)
export class LockConflictFilter implements ExceptionFilter<
  LockNotAcquiredError | LockServiceUnavailableError
> {
  constructor(
    @Optional() private readonly adapterHost?: HttpAdapterHost,
    @Optional() private readonly config?: ApplicationConfig,
  ) {}

  catch(
    error: LockNotAcquiredError | LockServiceUnavailableError,
    host: ArgumentsHost,
  ): unknown {
    const own = this.userFilterFor(error);
    if (own) return own.catch(error, host);
    const type = host.getType<string>();
    const conflict = conflictOf(error);
    if (!conflict) {
      // A @Locked method on an object Nest did not make is a bug: the
      // context's own answer to an unknown error.
      if (type === 'http' && this.adapterHost)
        return new BaseExceptionFilter(this.adapterHost.httpAdapter).catch(
          error,
          host,
        );
      return type === 'rpc' ? throwError(() => error) : rethrow(error);
    }
    if (type === 'http' && this.adapterHost)
      return answerHttp(conflict, host, this.adapterHost);
    if (type === 'graphql') return answerGraphQL(conflict);
    if (type === 'rpc') return answerRpc(conflict);
    if (type === 'ws') return answerWs(conflict, host);
    return rethrow(error);
  }

  /**
   * The app's own global filter for `error`, when one names its class (or
   * a parent) in `@Catch()`: Nest tries global filters last registered
   * first, and this module registers after the app's root module.
   */
  private userFilterFor(error: Error): ExceptionFilter | undefined {
    const filters = this.config?.getGlobalFilters() ?? [];
    for (let i = filters.length - 1; i >= 0; i--) {
      const filter = filters[i];
      if (filter instanceof LockConflictFilter) continue;
      const catches: unknown = Reflect.getMetadata(
        CATCHES,
        (filter as object).constructor,
      );
      if (
        Array.isArray(catches) &&
        catches.some(
          (type) => typeof type === 'function' && error instanceof type,
        )
      )
        return filter;
    }
    return undefined;
  }
}

function rethrow(error: Error): never {
  throw error;
}
