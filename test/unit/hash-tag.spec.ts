import { describe, expect, it } from '@jest/globals';
import { ownTag, taggedKey } from '../../lib/core/util/hash-tag.js';
import {
  groupBySlot,
  keysOf,
  slotOf,
} from '../../lib/core/cluster/key-slot.js';
import { fenceCounterKey } from '../../lib/core/fencing/tokens.js';

// Resources as users name them, and the awkward ones: braces anywhere,
// empty tags, unbalanced braces, a resource that looks like a tag.
const RESOURCES = [
  'order:42',
  'sku:A-1',
  '{user:7}:cart',
  '{user:7}:wallet',
  'user:7',
  '{user:7}',
  'a}b',
  '}',
  '{',
  '{}',
  '{}x',
  'x{}',
  '{{a}}',
  'a{b}c{d}',
  'naïve ключ 🔒',
  'with\nnewline',
];

describe('hash-tagged keys', () => {
  it('wraps a resource without braces whole, and keeps a braced one after a tag', () => {
    expect(taggedKey('lock:', 'order:42')).toBe('lock:{order:42}');
    expect(taggedKey('lock:', '{user:7}:cart')).toBe(
      'lock:{user:7}{user:7}:cart',
    );
    expect(taggedKey('lock:', 'a}b')).toMatch(/^lock:\{h:[\w-]{16}\}a\}b$/);
    expect(ownTag('lock:{}x')).toBeUndefined();
    expect(ownTag('x{a}{b}')).toBe('a');
  });

  it('puts every key the library keeps for a resource in one slot', () => {
    for (const resource of RESOURCES) {
      const key = taggedKey('lock:', resource);
      const slot = slotOf(key);
      const meta = ['q:', 't:', 'g:'].map((k) => `redlock:${k}${key}`);
      const channel = `redlock:w:AbC-_123:${key}`;
      for (const other of [...meta, fenceCounterKey('redlock:', key), channel])
        expect([resource, slotOf(other)]).toEqual([resource, slot]);
    }
  });

  it('maps different resources to different keys, and keys sharing a tag to one slot', () => {
    const keys = RESOURCES.map((r) => taggedKey('lock:', r));
    expect(new Set(keys).size).toBe(RESOURCES.length);
    expect(slotOf(taggedKey('lock:', '{user:7}:cart'))).toBe(
      slotOf(taggedKey('lock:', '{user:7}:wallet')),
    );
    expect(slotOf(taggedKey('lock:', 'user:7'))).toBe(
      slotOf(taggedKey('lock:', '{user:7}:cart')),
    );
  });

  it('groups a script’s keys by slot, column by column', () => {
    const locks = ['a', 'b', '{a}1'].map((r) => taggedKey('lock:', r));
    const counters = locks.map((k) => fenceCounterKey('redlock:', k));
    const groups = groupBySlot([...locks, ...counters], 2);
    expect(groups).toEqual([[0, 2], [1]]);
    expect(keysOf([...locks, ...counters], 2, groups[0])).toEqual([
      locks[0],
      locks[2],
      counters[0],
      counters[2],
    ]);
    expect(groupBySlot([locks[0], locks[2]], 1)).toEqual([[0, 1]]);
  });
});
