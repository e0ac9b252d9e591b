import { Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError, type Job } from 'bullmq';
import { LockService, lockConflictOf } from 'nestjs-redlock';
import { type AccountJob, AccountWork } from './account-work.service';
import { CONCURRENCY, QUEUE } from './env';

/** A short lease, so a conflict's retryAfterMs (the lease left) is short too. */
const TTL_MS = 2_000;
/**
 * The holder usually releases long before its lease ends (the body takes
 * ms): retry within half a second rather than wait the whole lease out.
 */
const MAX_DELAY_MS = 500;

/**
 * The documented recipe: one job per account at a time across every worker
 * process. A job that finds its account locked goes back to delayed (not
 * failed, no attempt used) and runs later; an outage fails the job.
 */
@Processor(QUEUE, { concurrency: CONCURRENCY })
export class AccountsProcessor extends WorkerHost {
  constructor(
    private readonly locks: LockService,
    private readonly work: AccountWork,
  ) {
    super();
  }

  async process(job: Job<AccountJob>, token?: string) {
    try {
      const done = await this.locks.run(
        `account:${job.data.account}`,
        () => this.work.apply(job),
        { waitTimeout: 0, ttl: TTL_MS },
      );
      await this.work.attempted('ran');
      return done;
    } catch (error) {
      const conflict = lockConflictOf(error);
      if (!conflict || conflict.code !== 'CONFLICT') throw error;
      await this.work.attempted('delayed', conflict.retryAfterMs);
      const delay = Math.min(Math.max(conflict.retryAfterMs, 50), MAX_DELAY_MS);
      await job.moveToDelayed(Date.now() + delay, token);
      throw new DelayedError();
    }
  }
}

/** The wrong recipe, for the control: `onNotAcquired: 'skip'` in a processor. */
@Processor(QUEUE, { concurrency: CONCURRENCY })
export class SkippingAccountsProcessor extends WorkerHost {
  constructor(private readonly work: AccountWork) {
    super();
  }

  async process(job: Job<AccountJob>) {
    const done = await this.work.applySkipping(job.data.account, job);
    await this.work.attempted(done ? 'ran' : 'skipped');
    return done;
  }
}
