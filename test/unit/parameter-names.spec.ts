import { describe, expect, it } from '@jest/globals';
import { parameterNames } from '../../lib/keys/parameter-names.js';

/* eslint-disable @typescript-eslint/no-unused-vars */
class Sample {
  plain(id: string, dto: unknown) {}
  async asyncMethod(id: string) {}
  defaults(a = '(,)', b = { x: [1, 2] }, c = `t${'('}`) {}
  destructured({ sku }: { sku: string }, [first]: string[], last: number) {}
  rest(first: string, ...items: string[]) {}
  commented(
    /* a, b */ id: string, // trailing
    dto: unknown,
  ) {}
  ['computed(name)'](x: number) {}
  empty() {}
}
const proto = Sample.prototype as unknown as Record<
  string,
  (...args: any[]) => unknown
>;

describe('parameterNames', () => {
  it('reads plain and async method parameters', () => {
    expect(parameterNames(proto.plain)).toEqual({
      names: ['id', 'dto'],
      rest: undefined,
    });
    expect(parameterNames(proto.asyncMethod)?.names).toEqual(['id']);
  });

  it('is not fooled by commas and parentheses in default values', () => {
    expect(parameterNames(proto.defaults)?.names).toEqual(['a', 'b', 'c']);
  });

  it('gives destructured parameters no name but keeps their position', () => {
    expect(parameterNames(proto.destructured)?.names).toEqual([
      undefined,
      undefined,
      'last',
    ]);
  });

  it('marks the rest parameter', () => {
    expect(parameterNames(proto.rest)).toEqual({
      names: ['first', 'items'],
      rest: 1,
    });
  });

  it('skips comments and computed names', () => {
    expect(parameterNames(proto.commented)?.names).toEqual(['id', 'dto']);
    expect(parameterNames(proto['computed(name)'])?.names).toEqual(['x']);
    expect(parameterNames(proto.empty)?.names).toEqual([]);
  });

  it('reads functions and arrow functions', () => {
    expect(
      parameterNames(function named(a: number, b: number) {})?.names,
    ).toEqual(['a', 'b']);
    expect(parameterNames((x: number) => x)?.names).toEqual(['x']);
    expect(
      parameterNames(async (x: number, y: number) => x + y)?.names,
    ).toEqual(['x', 'y']);
  });

  it('returns undefined for native, bound and Proxy functions', () => {
    expect(parameterNames(Math.max)).toBeUndefined();
    expect(parameterNames(proto.plain.bind({}))).toBeUndefined();
    expect(parameterNames(new Proxy(proto.plain, {}))).toBeUndefined();
  });

  it('shows what a minifier does: renamed parameters are the only names left', () => {
    // What esbuild/terser emit for `placeOrder(dto) {}` with name mangling.
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    const minified = new Function('return function(a,b){return a}')() as (
      ...args: any[]
    ) => unknown;
    expect(parameterNames(minified)?.names).toEqual(['a', 'b']);
  });
});
