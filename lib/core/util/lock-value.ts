import { randomFillSync } from 'node:crypto';

/** Bytes of randomness in a lock value (the Redlock page suggests 20). */
const VALUE_BYTES = 20;

/**
 * Random bytes for 200 values, refilled when used up: one `randomFillSync`
 * per 200 locks instead of one per acquire, on the hottest path there is.
 */
const pool = { buffer: Buffer.alloc(VALUE_BYTES * 200), offset: Infinity };

/** A new random lock value (base64url): it signs a lock on every node. */
export function randomValue(): string {
  if (pool.offset + VALUE_BYTES > pool.buffer.length) {
    randomFillSync(pool.buffer);
    pool.offset = 0;
  }
  const value = pool.buffer.toString(
    'base64url',
    pool.offset,
    pool.offset + VALUE_BYTES,
  );
  pool.offset += VALUE_BYTES;
  return value;
}
