import { describe, expect, it } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeadlineTimer, type Deadline } from '../../lib/core/deadline-timer.js';

// The one timer all polls share (no Redis: this is timer bookkeeping).
describe('DeadlineTimer', () => {
  const timeouts = () =>
    process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const due = (inMs: number, fired: number[], id: number): Deadline => ({
    at: performance.now() + inMs,
    fire: () => fired.push(id),
  });

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

  it('keeps the process alive only while deadlines are pending', () => {
    const before = timeouts();
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const a = due(5000, fired, 1);
    timer.add(a);
    expect(timeouts()).toBe(before + 1);
    timer.delete(a);
    // Still armed (for a.at), but unreferenced: an idle app may exit.
    expect(timeouts()).toBe(before);
    const b = due(6000, fired, 2);
    timer.add(b);
    expect(timeouts()).toBe(before + 1);
    timer.delete(b);
    expect(timeouts()).toBe(before);
    expect(fired).toEqual([]);
  });

  it('re-arms for a deadline added while it fires', async () => {
    const timer = new DeadlineTimer();
    const fired: number[] = [];
    const again: Deadline = {
      at: performance.now() + 5,
      fire: () => {
        fired.push(fired.length + 1);
        if (fired.length < 3) {
          again.at = performance.now() + 5;
          timer.add(again);
        }
      },
    };
    timer.add(again);
    await sleep(100);
    expect(fired).toEqual([1, 2, 3]);
    expect(timer.size).toBe(0);
  });
});
