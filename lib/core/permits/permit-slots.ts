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

/**
 * The key of permit slot `slot` of the resource whose key is `key`: the
 * resource key with the slot's suffix, so that on a Redis Cluster every
 * key of a resource shares its hash slot (the key's tag).
 */
export function permitKey(key: string, slot: number): string {
  return `${key}${PERMIT_SEPARATOR}${slot}`;
}

/** The resource key of a permit slot key (see {@link permitKey}). */
export function resourceKeyOf(slotKey: string): string {
  return slotKey.slice(0, slotKey.lastIndexOf(PERMIT_SEPARATOR));
}
