import { describe, expect, it } from '@jest/globals';
import {
  DriftDetector,
  type ClockSample,
  type DriftVerdict,
} from '../../lib/core/nodes/drift-detector.js';
import { resolveRedlockConfig } from '../../lib/core/config/resolve.js';
import { RedlockConfigError } from 'nestjs-redlock';
import { InMemoryRedlock } from 'nestjs-redlock/testing';

// The rate logic of the node-clock monitor, fed made-up readings: Redis
// cannot move its own TIME, so this is where a jump, a fast clock and a
// slow answer are shown. test/core/clock-monitor.spec.ts reads real nodes.
describe('DriftDetector', () => {
  const EPOCH = 1_800_000_000_000;
  /**
   * Readings every `interval` ms of the client's clock; `skew(t)` is how far
   * the node's clock is ahead at client time t; each round trip `rtt` ms.
   */
  function run(
    detector: DriftDetector,
    count: number,
    skew: (t: number) => number,
    { interval = 1000, rtt = 0.5, from = 0 } = {},
  ): DriftVerdict[] {
    const verdicts: DriftVerdict[] = [];
    for (let k = 0; k < count; k++) {
      const sentAt = from + k * interval;
      const answeredAt = sentAt + rtt;
      // The node reads its clock somewhere in the round trip; the worst
      // case for the detector is at either end, alternating.
      const at = k % 2 ? sentAt : answeredAt;
      const sample: ClockSample = {
        sentAt,
        answeredAt,
        nodeTime: EPOCH + at + skew(at),
      };
      verdicts.push(detector.observe(sample));
    }
    return verdicts;
  }

  it('keeps a node whose clock keeps time, or runs slower, or steps back', () => {
    const steady = new DriftDetector(0.01, 5000);
    expect(run(steady, 200, () => 0).filter(Boolean)).toEqual([]);
    // 0.5 % fast: within the 1 % allowance.
    const slightlyFast = new DriftDetector(0.01, 5000);
    expect(run(slightlyFast, 200, (t) => t * 0.005).filter(Boolean)).toEqual(
      [],
    );
    expect(slightlyFast.lastRate).toBeLessThan(0.01);
    // 5 % slow, then 2 s back at once: keys outlive the validity, no danger.
    const slow = new DriftDetector(0.01, 5000);
    expect(run(slow, 50, (t) => -t * 0.05).filter(Boolean)).toEqual([]);
    const back = new DriftDetector(0.01, 5000);
    expect(
      run(back, 50, (t) => (t > 20_000 ? -2000 : 0)).filter(Boolean),
    ).toEqual([]);
    expect(back.excluded).toBe(false);
    expect(back.samples).toBe(50);
  });

  it('holds out a node whose clock jumps forward, and lets it back once it kept time for the exclusion', () => {
    const detector = new DriftDetector(0.01, 5000);
    // +200 ms at client time 10.5 s; readings every second.
    const verdicts = run(detector, 30, (t) => (t > 10_500 ? 200 : 0));
    // The reading at 11 s sees it; the node is back at the first reading
    // at least 5 s after the last one out of bounds (11 s + 5 s = 16 s).
    expect(verdicts.indexOf('excluded')).toBe(11);
    expect(verdicts.indexOf('restored')).toBe(16);
    expect(verdicts.filter(Boolean)).toEqual(['excluded', 'restored']);
    expect(detector.excluded).toBe(false);
  });

  it('holds out a clock that runs fast beyond driftFactor, for as long as it does', () => {
    const detector = new DriftDetector(0.01, 3000);
    // 3 % fast from 5 s to 15 s, then keeping time again.
    const fast = (t: number) => Math.min(Math.max(t - 5000, 0), 10_000) * 0.03;
    const verdicts = run(detector, 30, fast);
    expect(verdicts.indexOf('excluded')).toBe(6);
    // Out of bounds up to the reading at 15 s; back at 18 s.
    expect(verdicts.indexOf('restored')).toBe(18);
    expect(verdicts.filter(Boolean)).toEqual(['excluded', 'restored']);
  });

  it('a jump again while held out extends the exclusion, with no second warning', () => {
    const detector = new DriftDetector(0.01, 5000);
    const skew = (t: number) => (t > 2500 ? 100 : 0) + (t > 5500 ? 100 : 0);
    const verdicts = run(detector, 20, skew);
    expect(verdicts.indexOf('excluded')).toBe(3);
    // The second jump is seen at 6 s: back at 11 s, not 8 s.
    expect(verdicts.indexOf('restored')).toBe(11);
    expect(verdicts.filter(Boolean)).toEqual(['excluded', 'restored']);
  });

  it('a slow answer makes it less sensitive, never holds out a healthy node', () => {
    // A 30 ms gain in 1 s (3 %) hidden in round trips of 40 ms: the node
    // may have read its clock anywhere in them, so the gain is not certain.
    const hidden = new DriftDetector(0.01, 5000);
    expect(
      run(hidden, 10, (t) => (t > 4500 ? 30 : 0), { rtt: 40 }).filter(Boolean),
    ).toEqual([]);
    // The same jump with fast answers is seen.
    const seen = new DriftDetector(0.01, 5000);
    expect(
      run(seen, 10, (t) => (t > 4500 ? 30 : 0), { rtt: 0.5 }).filter(Boolean),
    ).toEqual(['excluded']);
    // Round trips of up to 200 ms on a clock that keeps time: never.
    const jittery = new DriftDetector(0.01, 5000);
    let k = 0;
    for (; k < 300; k++) {
      const sentAt = k * 100;
      const rtt = (k * 37) % 200;
      const at = sentAt + ((k * 13) % (rtt + 1));
      expect(
        jittery.observe({ sentAt, answeredAt: sentAt + rtt, nodeTime: at }),
      ).toBeUndefined();
    }
  });

  it('driftFactor 0 holds out any certain gain', () => {
    const detector = new DriftDetector(0, 1000);
    expect(run(detector, 10, (t) => t * 0.003).filter(Boolean)).toEqual([
      'excluded',
    ]);
  });
});

describe('clockMonitor and recreateOnExtend options', () => {
  const clients = ['redis://127.0.0.1:1'];
  const fieldOf = (options: object) => {
    try {
      resolveRedlockConfig({ clients, ...options });
    } catch (error) {
      expect(error).toBeInstanceOf(RedlockConfigError);
      return (error as RedlockConfigError).message;
    }
    return 'accepted';
  };

  it('fills in the defaults: off, or interval 1000 and exclusion the ttl', () => {
    expect(resolveRedlockConfig({ clients }).clockMonitor).toBeUndefined();
    expect(resolveRedlockConfig({ clients }).recreateOnExtend).toBe(false);
    expect(
      resolveRedlockConfig({ clients, clockMonitor: true, ttl: 3000 })
        .clockMonitor,
    ).toEqual({ interval: 1000, exclusion: 3000 });
    expect(
      resolveRedlockConfig({
        clients,
        clockMonitor: { interval: 250, exclusion: 0 },
      }).clockMonitor,
    ).toEqual({ interval: 250, exclusion: 0 });
  });

  it('the in-memory testing lock accepts both and ignores them, and refuses them invalid alike', async () => {
    const lock = new InMemoryRedlock({
      clockMonitor: { interval: 10 },
      recreateOnExtend: true,
    });
    const held = await lock.acquire('r');
    await held.extend();
    await held.release();
    await lock.quit();
    expect(
      () =>
        new InMemoryRedlock({
          clockMonitor: { interval: -1 },
        }),
    ).toThrow('clockMonitor.interval');
  });

  it.each([
    [{ clockMonitor: 'yes' }, 'clockMonitor'],
    [{ clockMonitor: [] }, 'clockMonitor'],
    [{ clockMonitor: { interval: 0 } }, 'clockMonitor.interval'],
    [{ clockMonitor: { interval: Number.NaN } }, 'clockMonitor.interval'],
    [{ clockMonitor: { exclusion: -1 } }, 'clockMonitor.exclusion'],
    [{ clockMonitor: { exclusion: Infinity } }, 'clockMonitor.exclusion'],
    [{ recreateOnExtend: 1 }, 'recreateOnExtend'],
  ])('refuses %j naming %s', (options, field) => {
    expect(fieldOf(options)).toContain(field);
  });
});
