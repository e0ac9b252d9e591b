import { throwError, type Observable } from 'rxjs';
import type { LockConflict } from './lock-conflict.js';

/**
 * Microservices: the transport sends what the Observable errors with, as
 * Nest's own RPC errors are sent (`{ status: 'error', message }`), with the
 * conflict's fields beside them. A filter that threw instead would leave
 * the client without a reply until its own timeout.
 */
export function answerRpc(conflict: LockConflict): Observable<never> {
  return throwError(() => ({ status: 'error', ...conflict }));
}
