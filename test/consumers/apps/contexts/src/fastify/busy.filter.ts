import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { LockNotAcquiredError } from 'nestjs-redlock';

/**
 * A user's own answer to lock conflicts (429 and its own body), written
 * against Nest's HTTP adapter so that it works on Express and Fastify alike.
 */
@Catch(LockNotAcquiredError)
export class TooManyRequestsFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockNotAcquiredError, host: ArgumentsHost) {
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    httpAdapter.setHeader(response, 'x-busy', error.resources.join(','));
    httpAdapter.reply(
      response,
      { statusCode: 429, error: 'Too Many Requests', busy: error.resources },
      429,
    );
  }
}
