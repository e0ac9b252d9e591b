/**
 * The message a node publishes when a release hands a freed key to the
 * waiter that has waited longest there (see `handTo` in the wait-queue
 * Lua), read by that waiter's process (see `ReleaseListener`):
 *
 *     <key> \n <waiter's lock value> \n <1 <node time ms> | 0>
 *
 * `1`: the node gave the key to the waiter outright, at that time on its
 * own clock; `0`: the waiter is told to ask. The key comes first and may
 * hold newlines itself; the value and the flag hold none, so the message is
 * read from its end. Both sides are built here, from the same constants.
 */
export const RELEASE_MESSAGE = {
  /** Between the key, the value and the flag. */
  separator: '\n',
  /** The node gave the key outright; its time follows after a space. */
  given: '1',
  /** The waiter should ask. */
  told: '0',
} as const;

/** A release message, read (see {@link RELEASE_MESSAGE}). */
export interface ReleaseMessage {
  readonly key: string;
  /** The lock value of the waiter it names. */
  readonly value: string;
  /** True when the node gave the key to that waiter outright. */
  readonly given: boolean;
  /** When it gave it, on the node's clock (ms); `NaN` when told, or not said. */
  readonly givenAt: number;
}

const LUA_SEPARATOR = JSON.stringify(RELEASE_MESSAGE.separator);

/**
 * The Lua expression of a release message, from the names of three Lua
 * locals: the key, the waiter's value, and `flag`, which holds
 * {@link releaseFlagLua}'s value.
 */
export function releaseMessageLua(
  key: string,
  value: string,
  flag: string,
): string {
  return `${key} .. ${LUA_SEPARATOR} .. ${value} .. ${LUA_SEPARATOR} .. ${flag}`;
}

/**
 * The Lua expression of the message's flag: told, or (`givenAt`: a Lua
 * expression of the node's time in ms) given at that time.
 */
export function releaseFlagLua(givenAt?: string): string {
  return givenAt === undefined
    ? `'${RELEASE_MESSAGE.told}'`
    : `'${RELEASE_MESSAGE.given} ' .. ${givenAt}`;
}

/** Reads a release message; `undefined` when it is not one. */
export function parseReleaseMessage(
  message: string,
): ReleaseMessage | undefined {
  const { separator, given } = RELEASE_MESSAGE;
  const flagAt = message.lastIndexOf(separator);
  const valueAt = message.lastIndexOf(separator, flagAt - 1);
  if (valueAt < 0) return undefined;
  const flag = message.slice(flagAt + 1);
  const isGiven = flag.startsWith(given);
  return {
    key: message.slice(0, valueAt),
    value: message.slice(valueAt + 1, flagAt),
    given: isGiven,
    givenAt: isGiven ? Number(flag.slice(given.length + 1) || NaN) : NaN,
  };
}
