/**
 * Why `signal` aborted: its reason, or an `AbortError` when it has none (a
 * polyfilled signal may lack `reason`; an aborted call must still stop, and
 * reject with an error rather than `undefined`).
 */
export function abortReason(signal: AbortSignal): Error {
  return (
    (signal.reason as Error | undefined) ??
    new DOMException('This operation was aborted', 'AbortError')
  );
}
