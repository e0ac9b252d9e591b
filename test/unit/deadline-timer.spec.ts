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
    const firedAt = new Map<number, number[]>();
    const at = (inMs: number, id: number): Deadline =>
      new Due(performance.now() + inMs, () =>
        firedAt.set(id, [...(firedAt.get(id) ?? []), performance.now()]),
      );
    const later = at(60, 2);
    timer.add(later);
    // Earlier than the one the timer waits for: the timer is moved up.
    const sooner = at(20, 1);
    timer.add(sooner);
    const removed = at(10, 3);
    timer.add(removed);
    timer.delete(removed);
    // When the event loop could run a 20 ms timer of its own (on a busy
    // machine it may run late: then only order and bounds are checked).
    const probe = new Promise<number>((r) =>
      setTimeout(() => r(performance.now()), 20),
    );
    const loopRanAt = await probe;
    for (let i = 0; i < 100 && firedAt.size < 2; i++) await sleep(10);
    await sleep(20);
    expect([...firedAt.keys()].sort()).toEqual([1, 2]);
    expect(firedAt.get(1)).toHaveLength(1);
    expect(firedAt.get(2)).toHaveLength(1);
    expect(firedAt.get(1)![0]).toBeGreaterThanOrEqual(sooner.at);
    expect(firedAt.get(2)![0]).toBeGreaterThanOrEqual(later.at);
    // Moved up: the sooner deadline did not wait for the later one.
    if (loopRanAt < later.at) expect(firedAt.get(1)![0]).toBeLessThan(later.at);
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
