import { describe, expect, it } from '@jest/globals';
import {
  callTiming,
  resolveRedlockConfig,
} from '../../lib/core/config/resolve.js';
import { normalizeResources } from '../../lib/core/config/resources.js';
import { configError } from '../utils/config-error.js';

// Per-call timing is remembered by its option values (callTiming): these
// check that a remembered result is only ever the one resolveTiming would
// give, and that validation still runs for every value it has not accepted.
const config = () =>
  resolveRedlockConfig({ clients: [], ttl: 10_000, waitTimeout: 5_000 });

describe('callTiming', () => {
  it('reuses the timing of equal option values passed in new objects', () => {
    const c = config();
    const first = callTiming(c, { ttl: 2_000, waitTimeout: 0 });
    expect(callTiming(c, { ttl: 2_000, waitTimeout: 0 })).toBe(first);
    expect(first).toEqual({
      ttl: 2_000,
      waitTimeout: 0,
      retryDelay: 50,
      retryJitter: 50,
      nodeTimeout: 100,
      drift: 22,
    });
  });

  it('resolves each distinct set of values, more sets than it remembers', () => {
    const c = config();
    for (let round = 0; round < 2; round++) {
      for (let ttl = 100; ttl <= 900; ttl += 100) {
        const timing = callTiming(c, { ttl, waitTimeout: ttl / 100 });
        expect(timing.ttl).toBe(ttl);
        expect(timing.waitTimeout).toBe(ttl / 100);
        // The default node timeout follows each call's ttl.
        expect(timing.nodeTimeout).toBe(ttl / 10);
      }
    }
    // An option left out is the instance's, not a remembered call's.
    expect(callTiming(c, { waitTimeout: 1 }).ttl).toBe(10_000);
  });

  it('validates every value it has not accepted, however often it is passed', () => {
    const c = config();
    callTiming(c, { ttl: 2_000 });
    for (let i = 0; i < 3; i++) {
      expect(configError(() => callTiming(c, { ttl: -1 })).field).toBe(
        'options.ttl',
      );
      expect(configError(() => callTiming(c, { ttl: NaN })).field).toBe(
        'options.ttl',
      );
      expect(
        configError(() => callTiming(c, { ttl: 2_000, nodeTimeout: 2_000 }))
          .field,
      ).toBe('options.nodeTimeout');
    }
  });

  it('keeps the prefix errors name apart for equal values', () => {
    const c = config();
    expect(callTiming(c, { ttl: 3_000 }, '')).toBe(
      callTiming(c, { ttl: 3_000 }, ''),
    );
    expect(configError(() => callTiming(c, { ttl: 0 }, '')).field).toBe('ttl');
    expect(configError(() => callTiming(c, { ttl: 0 })).field).toBe(
      'options.ttl',
    );
  });
});

describe('normalizeResources', () => {
  it('returns one resource as a new one-element list, and refuses an empty one', () => {
    const a = normalizeResources('order:1');
    expect(a).toEqual(['order:1']);
    expect(normalizeResources('order:1')).not.toBe(a);
    expect(configError(() => normalizeResources('')).field).toBe('resources');
  });
});
