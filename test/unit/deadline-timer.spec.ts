import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { Deadline, DeadlineTimer } from '../../lib/core/util/deadline-timer.js';

class Due extends Deadline {
  constructor(
    at: number,
    readonly fire: () => void,
  ) {
    super();
    this.at = at;
  }
}

// The one timer all polls share (no Redis: this is timer bookkeeping).
describe('DeadlineTimer', () => {
  const timeouts = () =>
    process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const due = (inMs: number, fired: number[], id: number): Deadline =>
    new Due(performance.now() + inMs, () => fired.push(id));

  it('fires each pending deadline once, at or after its time, and never a removed one', async () => {
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const start = performance.now();
    const later = due(60, fired, 2);
    timer.add(later);
    // Earlier than the one the timer waits for: the timer is moved up.
    const sooner = due(20, fired, 1);
    timer.add(sooner);
    const removed = due(10, fired, 3);
    timer.add(removed);
    timer.delete(removed);
    await sleep(40);
    expect(fired).toEqual([1]);
    expect(performance.now() - start).toBeGreaterThanOrEqual(20);
    await sleep(60);
    expect(fired).toEqual([1, 2]);
    expect(timer.size).toBe(0);
  });

  it('unlinks a removed deadline wherever it is in the list', async () => {
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const [a, b, c] = [10, 20, 30].map((ms, i) => due(ms, fired, i + 1));
    for (const d of [a, b, c]) timer.add(d);
    timer.delete(b);
    timer.delete(a);
    // Removing twice changes nothing.
    timer.delete(a);
    expect(timer.size).toBe(1);
    await sleep(60);
    expect(fired).toEqual([3]);
    expect(timer.size).toBe(0);
  });

  it('keeps the process alive while deadlines are pending, and not once unreferenced when idle', () => {
    const before = timeouts();
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const a = due(5000, fired, 1);
    timer.add(a);
    expect(timeouts()).toBe(before + 1);
    timer.unrefWhenIdle();
    // Still pending: the timer must keep the process alive.
    expect(timeouts()).toBe(before + 1);
    timer.delete(a);
    timer.unrefWhenIdle();
    // Still armed (for a.at), but unreferenced: an idle app may exit.
    expect(timeouts()).toBe(before);
    const b = due(6000, fired, 2);
    timer.add(b);
    expect(timeouts()).toBe(before + 1);
    timer.delete(b);
    timer.unrefWhenIdle();
    expect(timeouts()).toBe(before);
    expect(fired).toEqual([]);
  });

  it('re-arms for a deadline added while it fires', async () => {
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const again: Deadline = new Due(performance.now() + 5, () => {
      fired.push(fired.length + 1);
      if (fired.length < 3) {
        again.at = performance.now() + 5;
        timer.add(again);
      }
    });
    timer.add(again);
    await sleep(100);
    expect(fired).toEqual([1, 2, 3]);
    expect(timer.size).toBe(0);
  });
});
