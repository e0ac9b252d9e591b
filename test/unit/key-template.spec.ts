import { describe, expect, it } from '@jest/globals';
import { LockKeyError } from 'nestjs-redlock';
import { parseTemplate } from '../../lib/keys/key-template.js';
import {
  argumentLookup,
  checkPlaceholders,
  compileKey,
  resolveKey,
} from '../../lib/keys/lock-key.js';
import type { ParameterList } from '../../lib/keys/parameter-names.js';

const params: ParameterList = { names: ['id', 'dto'] };
const resolve = (key: Parameters<typeof compileKey>[0], ...args: unknown[]) =>
  resolveKey(
    compileKey(key),
    argumentLookup(params, args),
    'Svc.m',
    undefined,
    args,
  );
const keyError = (fn: () => unknown): LockKeyError => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LockKeyError);
    return error as LockKeyError;
  }
  throw new Error('expected a LockKeyError');
};

describe('key templates', () => {
  it('parses literal text and placeholders', () => {
    const t = parseTemplate('sku:<dto.items.*.sku>:<0>');
    expect(t.placeholders.map((p) => [p.root, p.path])).toEqual([
      ['dto', ['items', '*', 'sku']],
      [0, []],
    ]);
  });

  it.each([
    ['', /non-empty/],
    ['order:<id', /not closed/],
    ['order:id>', /without a "<"/],
    ['order:<>', /empty/],
    ['order:<dto..sku>', /invalid part/],
    ['order:<-x>', /parameter name or a position/],
  ])('rejects the malformed template %j', (source, message) => {
    expect(() => parseTemplate(source)).toThrow(message);
  });

  it('resolves names, paths and positions', () => {
    expect(resolve('order:<id>', '42')).toEqual(['order:42']);
    expect(resolve('sku:<dto.sku>', '1', { sku: 'A' })).toEqual(['sku:A']);
    expect(resolve('o:<0>:<1.sku>', 7, { sku: 'B' })).toEqual(['o:7:B']);
    expect(resolve('n:<dto.n>', 1, { n: 0 })).toEqual(['n:0']);
  });

  it('expands <items.*.sku> to one resource per element, sorted and de-duplicated', () => {
    const dto = {
      items: [{ sku: 'C' }, { sku: 'A' }, { sku: 'C' }, { sku: 'B' }],
    };
    expect(resolve('sku:<dto.items.*.sku>', 1, dto)).toEqual([
      'sku:A',
      'sku:B',
      'sku:C',
    ]);
  });

  it('combines templates of a list, and two expansions give every pair', () => {
    expect(resolve(['b:<id>', 'a:<dto.x>', 'b:<id>'], 1, { x: 2 })).toEqual([
      'a:2',
      'b:1',
    ]);
    expect(resolve('<dto.a.*>-<dto.b.*>', 0, { a: [1, 2], b: ['x'] })).toEqual([
      '1-x',
      '2-x',
    ]);
  });

  it('reaches a rest parameter by name as a list', () => {
    const rest: ParameterList = { names: ['first', 'items'], rest: 1 };
    const key = compileKey('i:<items.*>');
    expect(
      resolveKey(
        key,
        argumentLookup(rest, ['f', 'x', 'y']),
        'S.m',
        undefined,
        [],
      ),
    ).toEqual(['i:x', 'i:y']);
  });

  it.each([
    ['undefined', ['order:<id>', undefined], /<id> got undefined/],
    ['null', ['order:<id>', null], /<id> got null/],
    ['an object', ['order:<id>', { a: 1 }], /<id> got a Object/],
    ['an empty string', ['order:<id>', ''], /<id> got an empty string/],
    [
      'an empty list',
      ['sku:<dto.items.*.sku>', 1, { items: [] }],
      /empty list at dto.items/,
    ],
    [
      'a list without *',
      ['order:<id>', ['a']],
      /use \.\* to lock one resource per element/,
    ],
    [
      'a missing parent',
      ['sku:<dto.x.sku>', 1, { x: null }],
      /cannot read "sku" of dto.x: it is null/,
    ],
    ['NaN', ['order:<id>', NaN], /got NaN/],
  ])(
    'throws LockKeyError naming method and placeholder for %s',
    (_, [key, ...args], message) => {
      const error = keyError(() => resolve(key as string, ...args));
      expect(error.method).toBe('Svc.m');
      expect(error.message).toMatch(/Svc\.m/);
      expect(error.message).toMatch(message);
    },
  );

  it('validates what a key function returns', () => {
    expect(resolve((id: string) => [`b:${id}`, 'a'], 'x')).toEqual([
      'a',
      'b:x',
    ]);
    expect(keyError(() => resolve(() => [], 1)).message).toMatch(
      /key function returned an empty list/,
    );
    expect(keyError(() => resolve(() => ['a', ''], 1)).message).toMatch(
      /at index 1/,
    );
    expect(
      keyError(() => resolve(() => 42 as unknown as string, 1)).message,
    ).toMatch(/returned 42/);
  });

  it('reports placeholders that name no parameter or a position past the last', () => {
    const problems = checkPlaceholders(
      compileKey(['<sku>', '<2>', '<1.x>']),
      params,
      'm(id, dto)',
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/<sku> names no parameter of m\(id, dto\)/);
    expect(problems[1]).toMatch(
      /<2> names argument 2, but m\(id, dto\) takes 2/,
    );
    expect(checkPlaceholders(compileKey('<id>'), undefined, 'm(?)')[0]).toMatch(
      /cannot be read.*positional/,
    );
  });
});
