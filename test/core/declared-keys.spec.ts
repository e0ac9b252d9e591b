import type { Redis } from 'ioredis';
import {
  ACQUIRE_SCRIPT,
  acquireArgs,
  declareMetaKeys,
  EXTEND_SCRIPT,
  RELEASE_SCRIPT,
  releaseArgs,
} from '../../lib/core/scripts/index.js';
import {
  KEY_SPANS,
  UNDECLARED,
  withDeclaredKeysCheck,
} from '../utils/declared-keys-lua.js';
import { libraryScripts } from '../utils/declared-keys-check.js';
import { closeAll, inspect, singleUrl, uniquePrefix } from '../utils/nodes.js';

/**
 * The tool of `npm run test:declared` (test/utils/declared-keys-check.ts):
 * the Lua prologue that fails a script on a key it did not declare, on a
 * real server. The whole suite in that mode is the proof that the
 * library's scripts declare every key; this shows the check itself bites.
 */
describe('declared-keys check (the test mode of npm run test:declared)', () => {
  let redis: Redis;
  let prefix: string;
  beforeAll(() => {
    [redis] = inspect([singleUrl()]);
  });
  beforeEach(() => {
    prefix = uniquePrefix('declared');
  });
  afterAll(() => closeAll([redis]));

  const run = (body: string, keys: string[], args: string[] = []) =>
    redis.eval(
      withDeclaredKeysCheck('probe', body),
      keys.length,
      ...keys,
      ...args,
    );

  it('a script that reaches an undeclared key fails, naming the script, the command, the key and its KEYS', async () => {
    const a = `${prefix}a`;
    await expect(
      run(
        `redis.call('SET', KEYS[1], 1) return redis.call('GET', ARGV[1])`,
        [a],
        [`${prefix}hidden`],
      ),
    ).rejects.toThrow(
      `${UNDECLARED} script "probe": GET on key "${prefix}hidden", not among its KEYS [${a}]`,
    );
    // Checked before the command runs, in helper functions too, and
    // through pcall.
    await expect(
      run(
        `local function touch(k) return redis.pcall('ZADD', k, 1, 'm') end
         return touch(ARGV[1])`,
        [a],
        [`${prefix}z`],
      ),
    ).rejects.toThrow(`ZADD on key "${prefix}z"`);
    expect(await redis.exists(`${prefix}z`)).toBe(0);
    await redis.del(a);
  });

  it('declared keys pass, every key of a multi-key command is checked, keyless commands pass', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((k) => prefix + k);
    expect(
      await run(
        `redis.call('MSET', KEYS[1], 1, KEYS[2], 2)
         redis.call('TIME')
         redis.call('PUBLISH', 'somewhere', 'x')
         return redis.call('DEL', KEYS[1], KEYS[2])`,
        [a, b],
      ),
    ).toBe(2);
    await expect(
      run(`return redis.call('DEL', KEYS[1], ARGV[1])`, [a], [c]),
    ).rejects.toThrow(`DEL on key "${c}"`);
    // MSET's values are not keys; its second key is.
    await expect(
      run(
        `return redis.call('MSET', KEYS[1], 'v', ARGV[1], 'w')`,
        [a, 'v'],
        [c],
      ),
    ).rejects.toThrow(`MSET on key "${c}"`);
  });

  it('a command missing from the key table fails loudly; one the server does not know gets its own refusal', async () => {
    expect(KEY_SPANS.SMOVE).toBeUndefined();
    await expect(
      run(`return redis.call('SMOVE', KEYS[1], KEYS[2], 'm')`, [
        `${prefix}s1`,
        `${prefix}s2`,
      ]),
    ).rejects.toThrow(`command SMOVE is not in the key table`);
    await expect(
      run(`return redis.call('NOPE', KEYS[1])`, [`${prefix}n`]),
    ).rejects.toThrow(/Unknown Redis command|unknown command/i);
  });

  it('a Cluster variant is judged by the keys the EVAL declared, not by what it leaves in KEYS', async () => {
    const [a, meta] = [`${prefix}a`, `${prefix}meta`];
    // As DECLARED_KEYS_LUA: the declared meta key taken off KEYS first.
    const body = `
local declared = tonumber(table.remove(ARGV))
while #KEYS > declared do table.remove(KEYS) end
return redis.call('EXISTS', KEYS[1], ARGV[1])`;
    expect(await run(body, [a, meta], [meta, '1'])).toBe(0);
  });

  it('the table holds every command the library scripts call', async () => {
    const all = await libraryScripts();
    expect(all.map(({ name }) => name).sort()).toEqual([
      'acquire',
      'extend',
      'extend-many',
      'fence',
      'fenced-write',
      'inspect',
      'inspect-permits',
      'inspect-rw',
      'keep',
      'permit-acquire',
      'permit-extend',
      'permit-release',
      'recreate',
      'release',
      'release (cluster)',
      'rw-acquire',
      'rw-extend',
      'rw-release',
      'rw-release (cluster)',
    ]);
    const called = new Set(
      all.flatMap(({ script }) =>
        [...script.source.matchAll(/redis\.p?call\('([A-Za-z]+)'/g)].map((m) =>
          m[1].toUpperCase(),
        ),
      ),
    );
    // The prologue's own COMMAND INFO goes to the real table.
    called.delete('COMMAND');
    expect([...called].filter((c) => !KEY_SPANS[c])).toEqual([]);
  });

  it('the library declares the meta keys each script may touch, none for fencing counters', () => {
    const acquire = declareMetaKeys(
      ACQUIRE_SCRIPT,
      ['k1', 'k2', 'c1', 'c2'],
      acquireArgs('v', 1000, 'm:', true, undefined),
    );
    expect(acquire.keys).toEqual([
      'k1',
      'k2',
      'c1',
      'c2',
      'm:q:k1',
      'm:t:k1',
      'm:q:k2',
      'm:t:k2',
    ]);
    expect(acquire.args).toEqual(['v', 1000, 'm:', 1, 4]);
    const release = declareMetaKeys(
      RELEASE_SCRIPT,
      ['k1'],
      releaseArgs('v', 'm:', undefined, true, undefined),
    );
    expect(release.keys).toEqual(['k1', 'm:q:k1', 'm:t:k1', 'm:g:k1']);
    expect(release.args).toEqual(['v', 'm:', 1]);
    // Scripts that touch only their own keys are sent as they are.
    const keys = ['k1'];
    const args = ['v', 1000];
    expect(declareMetaKeys(EXTEND_SCRIPT, keys, args)).toEqual({ keys, args });
  });

  const checking = process.env.REDLOCK_DECLARED_KEYS_CHECK === '1';
  (checking ? it : it.skip)(
    'in the test mode, every script the library sends carries the check',
    async () => {
      for (const { script } of await libraryScripts())
        expect(script.source).toMatch(/^\nlocal __dk_real = redis\n/);
    },
  );
});
