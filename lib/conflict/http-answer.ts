import type { ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { inSeconds, type LockConflict } from './lock-conflict.js';

/**
 * HTTP, on any adapter (Express, Fastify): the conflict's status, a
 * `Retry-After` header in whole seconds, and the conflict as the JSON body
 * with the status's name under `error`, as Nest's own error bodies have.
 */
export function answerHttp(
  conflict: LockConflict,
  host: ArgumentsHost,
  adapterHost: HttpAdapterHost,
): void {
  const { httpAdapter } = adapterHost;
  const response: unknown = host.switchToHttp().getResponse();
  httpAdapter.setHeader(
    response,
    'Retry-After',
    String(inSeconds(conflict.retryAfterMs)),
  );
  httpAdapter.reply(
    response,
    {
      ...conflict,
      error: conflict.statusCode === 409 ? 'Conflict' : 'Service Unavailable',
    },
    conflict.statusCode,
  );
}
