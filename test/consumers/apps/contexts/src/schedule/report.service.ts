import { Injectable } from '@nestjs/common';
import { Locked, type LockedOptions } from 'nestjs-redlock';
import { MIN_HOLD_MS, ON_UNAVAILABLE } from './env';
import { RecorderService } from './recorder.service';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The documented recipe for "one replica runs each tick": no waiting, skip
 * when another replica holds the lock, and keep the lock `minHold` ms so a
 * replica ticking up to ~100 ms later still finds it held.
 */
export const ONCE_PER_TICK: LockedOptions = {
  waitTimeout: 0,
  onNotAcquired: 'skip',
  ...(MIN_HOLD_MS > 0 ? { minHold: MIN_HOLD_MS } : {}),
  ...(ON_UNAVAILABLE ? { onUnavailable: ON_UNAVAILABLE } : {}),
};

/** The jobs' locked bodies: 10 ms of work, recorded. */
@Injectable()
export class ReportService {
  constructor(private readonly recorder: RecorderService) {}

  @Locked('cron-report', ONCE_PER_TICK)
  async cronReport(tick: number): Promise<true> {
    return this.body('cron-report', tick);
  }

  @Locked('interval-report', ONCE_PER_TICK)
  async intervalReport(tick: number): Promise<true> {
    return this.body('interval-report', tick);
  }

  async body(job: string, tick: number): Promise<true> {
    await this.recorder.enter(job);
    await pause(10);
    await this.recorder.leave(job, tick);
    return true;
  }
}
