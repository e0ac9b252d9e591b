import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import Redis from 'ioredis';
import { Locked } from 'nestjs-redlock';
import { BODY_MS, QUEUE_URL, RUN_ID } from './env';

export interface AccountJob {
  account: string;
}

/**
 * Counts `inside` up and down around a body and keeps its highest value:
 * above 1 when two bodies on the account overlapped, in any process.
 */
const ENTER = `local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The job's work on an account (a few ms), recorded in Redis for the test:
 * how many times each job's body ran, and whether bodies overlapped.
 */
@Injectable()
export class AccountWork implements OnApplicationShutdown {
  private readonly redis = new Redis(QUEUE_URL);

  key(...parts: string[]): string {
    return ['queue', RUN_ID, ...parts].join(':');
  }

  async apply(job: Job<AccountJob>): Promise<{ ranBy: number }> {
    const { account } = job.data;
    await this.redis.eval(
      ENTER,
      2,
      this.key(account, 'inside'),
      this.key(account, 'max-inside'),
    );
    await pause(BODY_MS);
    await this.redis
      .multi()
      .decr(this.key(account, 'inside'))
      .hincrby(this.key('bodies'), job.id!, 1)
      .exec();
    return { ranBy: process.pid };
  }

  /** An attempt at a job by this process, and what the lock said. */
  async attempted(outcome: string, retryAfterMs?: number): Promise<void> {
    const pipeline = this.redis
      .multi()
      .hincrby(this.key('attempts'), `${process.pid}:${outcome}`, 1);
    if (retryAfterMs !== undefined)
      pipeline.rpush(this.key('retry-after'), String(retryAfterMs));
    await pipeline.exec();
  }

  /**
   * The wrong recipe: `skip` resolves undefined when the account is locked,
   * so the processor returns and BullMQ counts the job as completed.
   */
  @Locked('account:<0>', { waitTimeout: 0, onNotAcquired: 'skip' })
  async applySkipping(
    account: string,
    job: Job<AccountJob>,
  ): Promise<{ ranBy: number }> {
    return this.apply(job);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
