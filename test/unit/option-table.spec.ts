import { afterAll, describe, expect, it } from '@jest/globals';
import {
  LockService,
  type RunOptions as PublicRunOptions,
} from 'nestjs-redlock';
import { InMemoryRedlock } from 'nestjs-redlock/testing';
import type { RunOptions } from '../../lib/core/config/options.js';
import {
  checkOptions,
  CLOCK_MONITOR_OPTION_RULES,
  optionNames,
  optionProblems,
  REDLOCK_OPTION_RULES,
  RUN_OPTION_RULES,
  TIMING_OPTION_RULES,
  WATCHDOG_OPTION_RULES,
  type OptionTable,
} from '../../lib/core/config/option-table.js';
import {
  flag,
  nonNegativeMs,
  positiveMs,
  type OptionRules,
} from '../../lib/core/config/rules.js';
import { RedlockConfigError } from '../../lib/errors/redlock-config.error.js';
import {
  checkLockedOptions,
  LOCKED_OPTION_RULES,
  toRunOptions,
} from '../../lib/utils/locked-options.js';
import { MODULE_OPTION_RULES } from '../../lib/utils/module-options.js';
import { configError } from '../utils/config-error.js';

// The option tables: one per options type, the only list of names and
// rules that the core's checks, @Locked's and the module's read. Pure: no
// Redis, no Nest.

const tables: [string, OptionTable, string][] = [
  ['RUN_OPTION_RULES', RUN_OPTION_RULES, 'options.'],
  ['WATCHDOG_OPTION_RULES', WATCHDOG_OPTION_RULES, 'options.'],
  ['CLOCK_MONITOR_OPTION_RULES', CLOCK_MONITOR_OPTION_RULES, 'clockMonitor.'],
  ['REDLOCK_OPTION_RULES', REDLOCK_OPTION_RULES, ''],
  ['LOCKED_OPTION_RULES', LOCKED_OPTION_RULES, 'options.'],
  ['MODULE_OPTION_RULES', MODULE_OPTION_RULES, ''],
];

/** Values of every kind an option takes, or must not take. */
const pool: unknown[] = [
  1000,
  0.1,
  0,
  -1,
  NaN,
  2 ** 31,
  true,
  false,
  'throw',
  'ignore',
  'skip',
  'warn',
  'read',
  'lock:',
  '',
  new AbortController().signal,
  () => 1,
  {},
  [],
  null,
  Symbol('neither'),
];

/** Options checked where they are read (the node count for `quorum`) or not at all (objects built in code). */
const checkedElsewhere = new Set([
  'clients',
  'quorum',
  'clock',
  'waitStrategy',
  'logger',
]);

describe('option tables', () => {
  describe.each(tables)('%s', (_name, table, prefix) => {
    it.each(optionNames(table).map((name) => [name]))(
      'accepts %s with a value of its type, and refuses one of another naming it',
      (name) => {
        const rule = table[name];
        const good = pool.find((value) => rule(value) === undefined);
        expect(good).not.toBeUndefined();
        expect(() =>
          checkOptions({ [name]: good }, table, prefix),
        ).not.toThrow();
        // Left out, or set to undefined: the default.
        expect(() =>
          checkOptions({ [name]: undefined }, table, prefix),
        ).not.toThrow();
        const bad = pool.find((value) => rule(value) !== undefined);
        if (checkedElsewhere.has(name)) {
          expect(bad).toBeUndefined();
          return;
        }
        expect(bad).not.toBeUndefined();
        const error = configError(() =>
          checkOptions({ [name]: bad }, table, prefix),
        );
        expect(error.field).toBe(`${prefix}${name}`);
        expect(error.message).toBe(`Invalid ${prefix}${name}: ${rule(bad)!}`);
        expect(rule(bad)).toMatch(/^must be /);
        expect(optionProblems({ [name]: bad }, table, prefix)).toEqual([
          `${prefix}${name} ${rule(bad)!}`,
        ]);
      },
    );

    it('refuses a name it does not list, with the nearest one and the known ones', () => {
      const [first] = optionNames(table);
      const typo = first.slice(0, -1);
      const error = configError(() =>
        checkOptions({ [first]: undefined, [typo]: 1 }, table, prefix),
      );
      expect(error).toBeInstanceOf(RedlockConfigError);
      expect(error.field).toBe(`${prefix}${typo}`);
      expect(error.message).toBe(
        `Invalid ${prefix}${typo}: '${typo}' is not an option; did you mean '${first}'? (known: ${optionNames(table).join(', ')})`,
      );
      expect(optionProblems({ [typo]: 1 }, table, prefix)).toEqual([
        `${prefix}${typo}: '${typo}' is not an option; did you mean '${first}'? (known: ${optionNames(table).join(', ')})`,
      ]);
    });
  });

  it('refuses an unknown name before a bad value, and one far from any without a suggestion', () => {
    const error = configError(() =>
      checkOptions({ maxHold: 0, maxHld: 5 }, RUN_OPTION_RULES),
    );
    expect(error.field).toBe('options.maxHld');
    expect(error.message).toContain(`did you mean 'maxHold'?`);
    const far = configError(() =>
      checkOptions({ nodes: [] }, REDLOCK_OPTION_RULES, ''),
    );
    expect(far.message).toMatch(
      /^Invalid nodes: 'nodes' is not an option \(known: ttl, /,
    );
    // Inherited properties are no options of the call; own ones named like
    // Object.prototype's members are.
    expect(() =>
      checkOptions(Object.create({ tll: 1 }) as object, RUN_OPTION_RULES),
    ).not.toThrow();
    expect(
      configError(() => checkOptions({ toString: 1 }, RUN_OPTION_RULES)).field,
    ).toBe('options.toString');
  });

  it('keeps the messages of every entry point', () => {
    const message = (
      options: object,
      table: OptionTable,
      prefix = 'options.',
    ) => configError(() => checkOptions(options, table, prefix)).message;
    expect(message({ ttl: 0 }, RUN_OPTION_RULES)).toBe(
      'Invalid options.ttl: must be a finite number > 0 (ms), got 0',
    );
    expect(message({ waitTimeout: 2 ** 31 }, RUN_OPTION_RULES)).toBe(
      'Invalid options.waitTimeout: must be at most 2147483647 ms (about 24.8 days, the longest timer Node sets), got 2147483648',
    );
    expect(message({ onLockLost: 'thro' }, RUN_OPTION_RULES)).toBe(
      `Invalid options.onLockLost: must be 'throw' or 'ignore', got "thro"`,
    );
    expect(message({ fencing: 'yes' }, RUN_OPTION_RULES)).toBe(
      'Invalid options.fencing: must be true or false, got "yes"',
    );
    expect(message({ signal: {} }, RUN_OPTION_RULES)).toBe(
      'Invalid options.signal: must be an AbortSignal, got a Object',
    );
    expect(message({ onLost: 'log' }, WATCHDOG_OPTION_RULES)).toBe(
      'Invalid options.onLost: must be a function, got "log"',
    );
    expect(message({ driftFactor: 0.5 }, REDLOCK_OPTION_RULES, '')).toBe(
      'Invalid driftFactor: must be a number in [0, 0.5), got 0.5',
    );
    expect(message({ localHandoff: 1.5 }, REDLOCK_OPTION_RULES, '')).toBe(
      'Invalid localHandoff: must be an integer >= 0 (0 disables the in-process handoff), got 1.5',
    );
    expect(message({ clockMonitor: [] }, REDLOCK_OPTION_RULES, '')).toBe(
      'Invalid clockMonitor: must be true, false or { interval?, exclusion? }, got an array of 0',
    );
    expect(message({ keyPrefix: 5 }, REDLOCK_OPTION_RULES, '')).toBe(
      'Invalid keyPrefix: must be a string, got 5',
    );
    expect(message({ retryAfter: -1 }, MODULE_OPTION_RULES, '')).toBe(
      'Invalid retryAfter: must be a duration in ms (a finite number >= 0) or a function of the conflict returning one, got -1',
    );
    expect(checkLockedOptions({ lockSet: '' })).toEqual([
      'options.lockSet must be the name of a RedlockModule.forRoot({ name }) import, got ""',
    ]);
    expect(checkLockedOptions({ onUnavailable: 'log' })).toEqual([
      `options.onUnavailable must be 'throw' or 'warn', got "log"`,
    ]);
  });
});

describe('one table per options family, shared', () => {
  it("@Locked takes the core's call options but signal, with the same rules, and the Nest-only ones", () => {
    const core = optionNames(RUN_OPTION_RULES).filter((n) => n !== 'signal');
    expect(optionNames(LOCKED_OPTION_RULES)).toEqual([
      ...core,
      'onNotAcquired',
      'onUnavailable',
      'lockSet',
      'retryAfter',
    ]);
    const locked: OptionTable = LOCKED_OPTION_RULES;
    const run: OptionTable = RUN_OPTION_RULES;
    for (const name of core) expect(locked[name]).toBe(run[name]);
  });

  it("the module takes the core's options and retryAfter; new Redlock() and calls share the timing rules", () => {
    expect(optionNames(MODULE_OPTION_RULES)).toEqual([
      ...optionNames(REDLOCK_OPTION_RULES),
      'retryAfter',
    ]);
    for (const name of optionNames(TIMING_OPTION_RULES)) {
      expect(optionNames(RUN_OPTION_RULES)).toContain(name);
      expect(optionNames(REDLOCK_OPTION_RULES)).toContain(name);
    }
  });

  it('@Locked reports every problem at once; toRunOptions keeps the core options only', () => {
    expect(
      checkLockedOptions({ tll: 5, ttl: 0, onNotAcquired: 'maybe' }),
    ).toEqual([
      expect.stringMatching(
        /^options\.tll: 'tll' is not an option; did you mean 'ttl'\?/,
      ),
      'options.ttl must be a finite number > 0 (ms), got 0',
      `options.onNotAcquired must be 'throw' or 'skip', got "maybe"`,
    ]);
    const options = {
      ttl: 1000,
      minHold: 5,
      fencing: true,
      onNotAcquired: 'skip',
      onUnavailable: 'warn',
      lockSet: 'payments',
      retryAfter: 3000,
    } as const;
    expect(checkLockedOptions(options)).toEqual([]);
    expect(toRunOptions(options)).toEqual({
      ttl: 1000,
      minHold: 5,
      fencing: true,
    });
  });
});

describe('each call checks its options once', () => {
  const redlock = new InMemoryRedlock();
  const locks = new LockService(redlock, { logger: { warn: () => undefined } });
  afterAll(() => redlock.quit());

  /** Options that count how often their names are listed (for...in, Object.keys). */
  const counted = (options: PublicRunOptions) => {
    const seen = { listed: 0 };
    const proxy = new Proxy(options, {
      ownKeys: (target) => {
        seen.listed++;
        return Reflect.ownKeys(target);
      },
    });
    return { proxy, seen };
  };

  it.each([
    [
      'acquire',
      (o: PublicRunOptions) => redlock.acquire('a', o).then((l) => l.release()),
    ],
    [
      'tryAcquire',
      (o: PublicRunOptions) =>
        redlock.tryAcquire('a', o).then((l) => l?.release()),
    ],
    ['using', (o: PublicRunOptions) => redlock.using('a', () => 1, o)],
    [
      'hold',
      (o: PublicRunOptions) =>
        redlock.acquire('a').then((l) => redlock.hold(l, () => 1, o)),
    ],
    ['LockService.run', (o: PublicRunOptions) => locks.run('a', () => 1, o)],
    [
      'LockService.run joining an enclosing run',
      (o: PublicRunOptions) => locks.run('a', () => locks.run('a', () => 1, o)),
    ],
  ] as const)('%s', async (_name, call) => {
    const { proxy, seen } = counted({ ttl: 1000, minHold: 0 });
    await call(proxy);
    expect(seen.listed).toBe(1);
  });

  it('and refuses a bad one on every path, before running anything', async () => {
    let ran = 0;
    const work = () => ran++;
    const bad = { maxHld: 5 } as never;
    const field = (call: Promise<unknown>) =>
      call.then(
        () => 'resolved',
        (e: unknown) => (e as RedlockConfigError).field,
      );
    expect(await field(redlock.using('a', work, bad))).toBe('options.maxHld');
    expect(await field(locks.run('a', work, bad))).toBe('options.maxHld');
    expect(await field(locks.run('a', () => locks.run('a', work, bad)))).toBe(
      'options.maxHld',
    );
    const lock = await redlock.acquire('b');
    expect(await field(redlock.hold(lock, work, bad))).toBe('options.maxHld');
    await lock.release();
    expect(ran).toBe(0);
  });
});

// Compile-time: each table is held to its type. These lines are checked by
// `npm run lint` (`tsc --noEmit -p tsconfig.json` includes test/); an
// `@ts-expect-error` that no longer meets an error fails it.
describe('the compiler holds each table to its type', () => {
  it('refuses a table missing an option, with an option of no type, or a rule of another type', () => {
    const { minHold: _minHold, ...withoutMinHold } = RUN_OPTION_RULES;
    // @ts-expect-error a table without `minHold`, an option of RunOptions
    const missing: OptionRules<RunOptions> = withoutMinHold;
    const extra = {
      ...RUN_OPTION_RULES,
      // @ts-expect-error `minHld` is no option of RunOptions
      minHld: nonNegativeMs,
    } satisfies OptionRules<RunOptions>;
    const mistyped = {
      ...RUN_OPTION_RULES,
      // @ts-expect-error `fencing` is a boolean, not a duration
      fencing: positiveMs,
    } satisfies OptionRules<RunOptions>;
    interface WiderRunOptions extends RunOptions {
      keepWarm?: boolean;
    }
    // @ts-expect-error an option added to the type without a rule
    const behind: OptionRules<WiderRunOptions> = RUN_OPTION_RULES;
    const complete: OptionRules<WiderRunOptions> = {
      ...RUN_OPTION_RULES,
      keepWarm: flag,
    };
    expect([missing, extra, mistyped, behind, complete]).toHaveLength(5);
  });
});
