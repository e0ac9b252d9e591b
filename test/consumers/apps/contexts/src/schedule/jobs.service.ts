import {
  BeforeApplicationShutdown,
  Injectable,
  OnModuleInit,
} from '@nestjs/common';
import { Cron, Interval } from '@nestjs/schedule';
import { Locked } from 'nestjs-redlock';
import { ALIGN_AT, SKEW_MS, STOP_AFTER_RUNS } from './env';
import { type Attempt, RecorderService } from './recorder.service';
import { ONCE_PER_TICK, ReportService } from './report.service';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The scheduled jobs of one replica. Each records every attempt (ran,
 * skipped or failed) before the error, if any, goes on to the scheduler,
 * which logs it as an ERROR.
 */
@Injectable()
export class JobsService implements OnModuleInit, BeforeApplicationShutdown {
  private cronRuns = 0;
  /** Attempts under way: the recorder's connection closes after them. */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly reports: ReportService,
    private readonly recorder: RecorderService,
  ) {}

  /**
   * Runs before any onApplicationBootstrap hook, so the scheduler mounts
   * @Interval right after the shared start (or a whole number of seconds
   * after it, when this replica booted late): the replicas' intervals fire
   * together, as their @Cron jobs do.
   */
  async onModuleInit(): Promise<void> {
    const late = Date.now() - ALIGN_AT;
    await pause(late > 0 ? 1000 - (late % 1000) : -late);
  }

  /**
   * The scheduler stops firing at shutdown but does not wait for a job that
   * already fired; the recorder (closed on application shutdown, after this
   * hook) must outlive it.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  @Cron('* * * * * *', { name: 'cron-report' })
  async everySecond(): Promise<void> {
    // The second it fired for (the cron library may fire a ms early).
    const tick = Math.round(Date.now() / 1000);
    await this.attempt('cron-report', tick, () =>
      this.reports.cronReport(tick),
    );
  }

  /**
   * The form the docs show: @Cron and @Locked on one method. No skew here
   * (the lock is taken as the job fires): the replicas fire within ms.
   */
  @Cron('* * * * * *', { name: 'stacked-report' })
  @Locked('stacked-report', ONCE_PER_TICK)
  async stacked(): Promise<void> {
    await this.reports.body('stacked-report', Math.round(Date.now() / 1000));
  }

  @Interval('interval-report', 1000)
  async everyInterval(): Promise<void> {
    const tick = Math.round((Date.now() - ALIGN_AT) / 1000);
    await this.attempt('interval-report', tick, () =>
      this.reports.intervalReport(tick),
    );
  }

  private async attempt(
    job: string,
    tick: number,
    call: () => Promise<true | undefined>,
  ): Promise<void> {
    const attempt = this.record(job, tick, call);
    this.inFlight.add(attempt);
    try {
      await attempt;
    } finally {
      this.inFlight.delete(attempt);
    }
  }

  private async record(
    job: string,
    tick: number,
    call: () => Promise<true | undefined>,
  ): Promise<void> {
    // A replica whose clock (or timers) run SKEW_MS behind the others'.
    await pause(SKEW_MS);
    const at = Date.now();
    const record = (outcome: Attempt['outcome']) =>
      this.recorder.attempt(job, { pid: process.pid, tick, at, outcome });
    let ran: true | undefined;
    try {
      ran = await call();
    } catch (error) {
      await record(`error:${(error as { reason?: string }).reason}`);
      throw error;
    }
    await record(ran ? 'ran' : 'skipped');
    if (job === 'cron-report' && ran && ++this.cronRuns === STOP_AFTER_RUNS)
      process.kill(process.pid, 'SIGTERM');
  }
}
