import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { RECORD_URL, RUN_ID } from './env';

/** One attempt of a job on one replica: what became of its locked call. */
export interface Attempt {
  pid: number;
  tick: number;
  /** When the locked call began (epoch ms): shows the replicas' skew. */
  at: number;
  outcome: 'ran' | 'skipped' | `error:${string}`;
}

/**
 * Counts `inside` up and down around a body and keeps its highest value:
 * 1 when the bodies never overlap, whichever process runs them.
 */
const ENTER = `local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`;

/** Where the replicas write what they did, for the test to read. */
@Injectable()
export class RecorderService implements OnApplicationShutdown {
  private readonly redis = new Redis(RECORD_URL);

  key(...parts: (string | number)[]): string {
    return ['sched', RUN_ID, ...parts].join(':');
  }

  async enter(job: string): Promise<void> {
    await this.redis.eval(
      ENTER,
      2,
      this.key(job, 'inside'),
      this.key(job, 'max-inside'),
    );
  }

  async leave(job: string, tick: number): Promise<void> {
    await this.redis
      .multi()
      .decr(this.key(job, 'inside'))
      .hincrby(this.key(job, 'runs'), String(tick), 1)
      .exec();
  }

  async attempt(job: string, attempt: Attempt): Promise<void> {
    await this.redis.rpush(this.key(job, 'attempts'), JSON.stringify(attempt));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit();
  }
}
