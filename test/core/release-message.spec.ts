import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  parseReleaseMessage,
  releaseFlagLua,
  releaseMessageLua,
  RELEASE_MESSAGE,
} from '../../lib/core/scripts/release-message.js';
import { singleUrl } from '../utils/nodes.js';

// The release message is written by Lua on the nodes and read by the
// listener in Node: both sides come from one module. The round trip runs the
// Lua the scripts embed on a real server and reads what it returns.

describe('release message', () => {
  const redis = new Redis(singleUrl());
  afterAll(() => redis.quit());

  /** The message the scripts would publish for `key` and `value`, built by the server. */
  async function sent(key: string, value: string, given: boolean) {
    const lua = `
      local key, value = KEYS[1], ARGV[1]
      local given = ${releaseFlagLua()}
      if ARGV[2] == '1' then given = ${releaseFlagLua('ARGV[3]')} end
      return ${releaseMessageLua('key', 'value', 'given')}`;
    return (await redis.eval(
      lua,
      1,
      key,
      value,
      given ? '1' : '0',
      '1732700000123',
    )) as string;
  }

  it.each([
    ['a plain key', 'lock:sku:1'],
    ['a key with newlines and spaces', 'lock:a\nb c\n\nd'],
    ['a key of one character', 'k'],
    ['a key ending with a newline', 'lock:\n'],
  ])('round-trips %s, given and told', async (_, key) => {
    const value = 'Zm9vYmFyYmF6cXV4MTIzNDU2';
    expect(parseReleaseMessage(await sent(key, value, true))).toEqual({
      key,
      value,
      given: true,
      givenAt: 1732700000123,
    });
    const told = parseReleaseMessage(await sent(key, value, false));
    expect(told).toMatchObject({ key, value, given: false });
    expect(told?.givenAt).toBeNaN();
  });

  it('reads a given flag without a time as given at an unknown time', () => {
    const { separator, given } = RELEASE_MESSAGE;
    const message = parseReleaseMessage(`k${separator}v${separator}${given}`);
    expect(message).toMatchObject({ key: 'k', value: 'v', given: true });
    expect(message?.givenAt).toBeNaN();
  });

  it('refuses what is not a release message', () => {
    expect(parseReleaseMessage('no separators')).toBeUndefined();
    expect(
      parseReleaseMessage(`only one${RELEASE_MESSAGE.separator}0`),
    ).toBeUndefined();
  });
});
