/**
 * The answer the contract gives for a call refused because `resources`
 * are held (reason `busy`): the payload every context carries, given the
 * `retryAfterMs` the server chose.
 */
export function busyConflict(resources: string[], retryAfterMs: number) {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    name: 'LockNotAcquiredError',
    code: 'CONFLICT',
    statusCode: 409,
    message: `The resource is locked: ${resources.join(', ')}. Retry after ${seconds} s.`,
    reason: 'busy',
    resources,
    retryAfterMs,
  };
}

/** `Retry-After` for `retryAfterMs`: whole seconds, at least 1. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}
