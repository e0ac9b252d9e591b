import { RedlockConfigError } from '../../errors/redlock-config.error.js';
import { show } from '../util/validate.js';

// Fencing tokens across a quorum of independent masters. The safety argument
// (why a later token is always greater) is in docs/fencing.md.

/**
 * A fencing token: a non-negative integer as a canonical decimal string
 * (digits only, no leading zeros), e.g. `"42"`. Strings survive JSON, Lua and
 * SQL parameters without rounding; compare them with
 * {@link compareFencingTokens} or as `BigInt`, never as plain strings.
 *
 * @publicApi
 */
export type FencingToken = string;

const CANONICAL = /^(0|[1-9][0-9]*)$/;

/**
 * True when `value` is a fencing token: a canonical decimal string.
 *
 * @publicApi
 */
export function isFencingToken(value: unknown): value is FencingToken {
  return typeof value === 'string' && CANONICAL.test(value);
}

/**
 * Orders two fencing tokens numerically: negative when `a` is older than `b`,
 * 0 when equal, positive when newer. Throws `RedlockConfigError` on a value
 * that is not a token.
 *
 * @publicApi
 */
export function compareFencingTokens(a: FencingToken, b: FencingToken): number {
  const x = parseToken('a', a);
  const y = parseToken('b', b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Parses a token, naming `field` when it is not one. */
export function parseToken(field: string, value: unknown): bigint {
  if (!isFencingToken(value)) {
    throw new RedlockConfigError(
      field,
      `must be a fencing token (a decimal string such as "42", from lock.fencingToken), got ${show(value)}`,
    );
  }
  return BigInt(value);
}

/**
 * The counter key of a lock key: `<metaPrefix>fence:<lockKey>`. Lock keys
 * start with `keyPrefix` and counter keys with `metaPrefix`, and neither
 * prefix may start with the other, so the two never collide; keeping the
 * whole lock key inside gives apps with different `keyPrefix`es their own
 * counters.
 *
 * @publicApi
 */
export function fenceCounterKey(metaPrefix: string, lockKey: string): string {
  return `${metaPrefix}fence:${lockKey}`;
}

/** A counter as a node returned it; anything that is not a token (a key someone else wrote) counts as 0. */
export function counterValue(reply: unknown): bigint {
  const text =
    typeof reply === 'string'
      ? reply
      : Buffer.isBuffer(reply)
        ? reply.toString()
        : typeof reply === 'number'
          ? String(reply)
          : '';
  return isFencingToken(text) ? BigInt(text) : 0n;
}
