import { Injectable } from '@nestjs/common';
import {
  JitteredRetry,
  type WaitContext,
  type WaitStrategy,
} from 'nestjs-redlock';

/** Counters the demo reads from `GET /stats`. */
export interface LockStatsSnapshot {
  /** Acquires that found their resources held and had to wait at least once. */
  lockWaits: number;
  /** Retries after a busy attempt, over all acquires. */
  lockRetries: number;
}

/**
 * The library's default wait strategy, counting how often acquires wait.
 * Plugged in through the module's `waitStrategy` option.
 */
@Injectable()
export class LockStats implements WaitStrategy {
  private readonly inner = new JitteredRetry();
  private waits = 0;
  private retries = 0;

  wait(context: WaitContext): Promise<void> {
    if (context.attempt === 1) this.waits++;
    this.retries++;
    return this.inner.wait(context);
  }

  snapshot(): LockStatsSnapshot {
    return { lockWaits: this.waits, lockRetries: this.retries };
  }
}
