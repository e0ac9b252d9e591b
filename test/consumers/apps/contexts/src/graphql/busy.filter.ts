import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { GraphQLError } from 'graphql';
import { LockNotAcquiredError } from 'nestjs-redlock';

/**
 * A user's own answer to lock conflicts: in a resolver, the error it
 * returns (graphql-js reports a returned Error as the field's error); over
 * HTTP, 429 through Nest's adapter (Express or Fastify alike).
 */
@Catch(LockNotAcquiredError)
export class BusyFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockNotAcquiredError, host: ArgumentsHost) {
    if (host.getType<string>() === 'graphql')
      return new GraphQLError('Busy, try again later', {
        extensions: { code: 'TOO_MANY_REQUESTS', busy: error.resources },
      });
    const { httpAdapter } = this.adapterHost;
    httpAdapter.reply(
      host.switchToHttp().getResponse(),
      { statusCode: 429, error: 'Too Many Requests', busy: error.resources },
      429,
    );
  }
}
