/**
 * How a semaphore's permits are named: permit `i` of `resource` is the
 * resource `<resource>#permit-<i>`, locked as a mutex is. The bound of
 * `permits` holders is then the mutex's exclusion, slot by slot: each slot
 * has at most one holder over the quorum, and there are `permits` slots.
 */
export const PERMIT_SEPARATOR = '#permit-';

/** The resource of permit slot `slot` of `resource`. */
export function permitResource(resource: string, slot: number): string {
  return `${resource}${PERMIT_SEPARATOR}${slot}`;
}
